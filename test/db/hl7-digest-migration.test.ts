import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { buildApp } from '../../app.js'
import { defaultConfig } from '../../config.js'
import { openDatabase } from '../../db/connection.js'
import { loadMigrations, migrate } from '../../db/migrations.js'
import { ackOf, openSender } from '../hl7/client.js'
import { adt } from '../hl7/messages.js'

// Migration 15: the ADT message log is rebuilt with a digest of each message, so exactly-once
// compares content; the rows 0.7.x logged keep every column and, having no digest, the old rule.

const INSERT = `INSERT INTO hl7_messages (id, sending_application, sending_facility, control_id, message_type, event,
  facility, encounter, received_at, event_at, status, ack_code, ack, error_field, error, park_code, raw)
  VALUES (?, 'HIS', 'GENERAL', ?, 'ADT', 'A01', ?, ?, 1, 2, ?, ?, ?, NULL, NULL, ?, ?)`

const OLD_ACK = 'MSH|^~\\&|WARD|FS|HIS|GENERAL|20260105103000||ACK^A01^ACK|9|P|2.5.1\rMSA|AA|OLD-1|applied\r'

function version14(path: string): void {
  const old = new BetterSqlite3(path)
  migrate(old, loadMigrations().slice(0, 14))
  const row = old.prepare(INSERT)
  row.run('0123456789abcdef01234567', 'OLD-1', 'A', 'E1', 'applied', 'AA', OLD_ACK, null, 'MSH|old text')
  row.run('0123456789abcdef01234568', 'OLD-2', 'A', 'E2', 'parked', 'AA', 'ack', 'not-admitted', 'MSH|parked')
  row.run('0123456789abcdef01234569', null, null, null, 'rejected', 'AR', 'ar', null, null)
  old.close()
}

t.test('migration 15 keeps every logged message and the one-answer-per-key rule', async (t) => {
  const path = join(t.testdir(), 'v14.db')
  version14(path)
  const db = openDatabase(path)
  t.teardown(() => db.close())
  t.same(
    db
      .prepare(
        `SELECT control_id, facility, status, park_code, raw, digest, control_id_used_by, read_with
         FROM hl7_messages ORDER BY id`,
      )
      .all(),
    [
      { control_id: 'OLD-1', facility: 'A', status: 'applied', park_code: null, raw: 'MSH|old text' },
      { control_id: 'OLD-2', facility: 'A', status: 'parked', park_code: 'not-admitted', raw: 'MSH|parked' },
      { control_id: null, facility: null, status: 'rejected', park_code: null, raw: null },
    ].map((r) => ({ ...r, digest: null, control_id_used_by: null, read_with: null })),
  )
  const insert = db.prepare(
    `INSERT INTO hl7_messages (id, sending_application, sending_facility, control_id, received_at, status, ack_code,
       ack, digest, control_id_used_by) VALUES (?, 'HIS', 'GENERAL', 'OLD-1', 3, ?, ?, 'x', ?, ?)`,
  )
  t.throws(() => insert.run('a'.repeat(24), 'applied', 'AA', 'd1', null), /UNIQUE/, 'one answered message a key')
  insert.run('b'.repeat(24), 'rejected', 'AR', 'd1', '0123456789abcdef01234567')
  t.throws(
    () => insert.run('c'.repeat(24), 'rejected', 'AR', 'd1', '0123456789abcdef01234567'),
    /UNIQUE/,
    'one refusal a content',
  )
  t.throws(
    () => insert.run('d'.repeat(24), 'applied', 'AA', 'd2', '0123456789abcdef01234567'),
    /CHECK/,
    'only a rejected message names the row that holds its control id',
  )
  const indexes = db
    .prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'hl7_messages' AND sql IS NOT NULL")
    .pluck()
    .all()
  t.same((indexes as string[]).sort(), [
    'hl7_messages_answered',
    'hl7_messages_encounter_applied',
    'hl7_messages_refused',
    'hl7_messages_status',
    'hl7_messages_unpruned',
  ])
})

t.test('after migration 15, a control id 0.7.x answered gets its stored ACK whatever the content', async (t) => {
  const path = join(t.testdir(), 'v14.db')
  version14(path)
  const app = await buildApp(defaultConfig({ DATABASE_PATH: path, LOG_LEVEL: 'silent', HL7_PORT: 0 }))
  t.teardown(() => app.close())
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  const ack = await sender.send(adt({ event: 'A01', control: 'OLD-1', encounter: 'E7', bed: 'B7' }))
  t.same(ackOf(ack), ackOf(OLD_ACK), 'the stored ACK: what the old message said was not kept')
  const fresh = ackOf(await sender.send(adt({ event: 'A01', control: 'NEW-1', encounter: 'E8', bed: 'B8' })))
  t.equal(fresh.code, 'AA')
  t.equal(app.db.prepare('SELECT digest IS NOT NULL FROM hl7_messages WHERE control_id = ?').pluck().get('NEW-1'), 1)
})

// Migration 18: refused senders' rows go (they held other senders' control ids and echoed ACKs);
// a row whose text an older version cleared is pruned again, of everything that names the patient.
t.test('migration 18 drops the rows of refused senders; older pruned rows are pruned of the rest', async (t) => {
  const path = join(t.testdir(), 'v16.db')
  const old = new BetterSqlite3(path)
  migrate(old, loadMigrations().slice(0, 16))
  const row = old.prepare(
    `INSERT INTO hl7_messages (id, sending_application, sending_facility, control_id, encounter, received_at, status,
       ack_code, ack, error_field, error, raw, digest) VALUES (?, ?, 'GENERAL', ?, ?, 1, ?, ?, ?, ?, ?, NULL, 'd')`,
  )
  const parkedAck =
    'MSH|^~\\&|WARD|FS|HIS|GENERAL|20260105103000||ACK^A01^ACK|9|P|2.5.1\rMSA|AA|P-1|parked: bed B1 of A is occupied by E-OLD'
  row.run(
    '0123456789abcdef01234567',
    'HIS',
    'P-1',
    'E-OLD',
    'dismissed',
    'AA',
    parkedAck,
    null,
    'bed B1 of A ... E-OLD',
  )
  row.run(
    '0123456789abcdef01234568',
    'HIS',
    'H-2',
    null,
    'rejected',
    'AR',
    'ar',
    'MSH-3',
    'sender HIS ... not in HL7_ALLOWED_SENDERS',
  )
  old.close()
  const app = await buildApp(defaultConfig({ DATABASE_PATH: path, LOG_LEVEL: 'silent', HL7_KEEP_DAYS: 1 }))
  t.teardown(() => app.close())
  await app.writes.run(() => undefined)
  t.same(
    app.db.prepare('SELECT control_id, encounter, error, ack, pruned_at IS NOT NULL AS pruned FROM hl7_messages').all(),
    [{ control_id: 'P-1', encounter: null, error: null, ack: parkedAck.replace(/parked: .*$/, 'parked'), pruned: 1 }],
    "the refused sender's row is gone; the start's prune cleared the rest of the old one",
  )
})
