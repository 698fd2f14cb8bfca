import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import { test } from 'tap'
import { buildLoggedApp } from '../reliability/fault-helpers.js'
import { ackOf, openSender } from './client.js'
import { adt } from './messages.js'

/**
 * AE, never AA or AR, when the database cannot take the message now: the sender keeps it and sends
 * it again, and then it is applied once. The faults are the storage-fault harness's: a full disk by
 * max_page_count, a lock held by a second connection. The oracle is a second connection reading the file.
 */
test('a full disk: AE with the reason, nothing stored; after space is freed the resend is applied once', async (t) => {
  const path = join(t.testdir(), 'full.db')
  const { app, lines } = await buildLoggedApp(t, { DATABASE_PATH: path, HL7_PORT: 0 })
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  const message = (i: number) =>
    adt({
      event: 'A01',
      control: `F${i}`,
      encounter: `E${i}`,
      bed: `B${i}`,
      room: 'r'.repeat(200),
      patient: 'PAT-SECRET',
    })
  const pages = app.db.pragma('page_count', { simple: true }) as number
  app.db.pragma(`max_page_count = ${pages + 8}`)
  let refused: { i: number; ack: ReturnType<typeof ackOf> } | null = null
  for (let i = 0; i < 2000 && !refused; i++) {
    const ack = ackOf(await sender.send(message(i)))
    if (ack.code !== 'AA') refused = { i, ack }
  }
  if (!refused) throw new Error('the database never filled up')
  t.equal(refused.ack.code, 'AE', 'a transient failure: AE, so the sender retries')
  t.match(refused.ack.text, /disk .* is full/)
  t.match(refused.ack.err, /^ERR\|/)
  const reader = new BetterSqlite3(path, { readonly: true })
  t.teardown(() => reader.close())
  const logged = reader.prepare('SELECT count(*) FROM hl7_messages WHERE control_id = ?').pluck()
  t.equal(logged.get(`F${refused.i}`), 0, 'the refused message is not in the log')
  t.equal(reader.prepare('SELECT count(*) FROM ward_occupants WHERE encounter = ?').pluck().get(`E${refused.i}`), 0)

  app.db.pragma('max_page_count = 1073741823')
  t.equal(ackOf(await sender.send(message(refused.i))).code, 'AA', 'the resend is applied')
  t.equal(ackOf(await sender.send(message(refused.i))).code, 'AA', 'and a second resend gets the stored ACK')
  t.equal(reader.prepare('SELECT count(*) FROM ward_occupants WHERE encounter = ?').pluck().get(`E${refused.i}`), 1)
  t.notOk(
    lines.some((l) => JSON.stringify(l).includes('PAT-SECRET')),
    'the patient is in no log line',
  )
})

test('a lock held past DATABASE_BUSY_TIMEOUT_MS: AE; once it is released the resend is applied', async (t) => {
  const path = join(t.testdir(), 'busy.db')
  const { app } = await buildLoggedApp(t, { DATABASE_PATH: path, HL7_PORT: 0, DATABASE_BUSY_TIMEOUT_MS: 100 })
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  const lock = new BetterSqlite3(path)
  t.teardown(() => {
    if (lock.inTransaction) lock.exec('ROLLBACK')
    lock.close()
  })
  lock.exec('BEGIN IMMEDIATE')
  const a01 = adt({ event: 'A01', control: 'L1', encounter: 'E1', bed: 'B1' })
  const busy = ackOf(await sender.send(a01))
  t.equal(busy.code, 'AE')
  t.match(busy.text, /locked by another process/)
  t.match(busy.err, /\|206\^/, 'HL7 error 206: application record locked')
  lock.exec('ROLLBACK')
  t.equal(ackOf(await sender.send(a01)).code, 'AA')
  t.equal(lock.prepare('SELECT count(*) FROM ward_occupants').pluck().get(), 1)
})
