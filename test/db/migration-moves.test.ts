import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { openDatabase } from '../../db/connection.js'
import { loadMigrations, migrate } from '../../db/migrations.js'

// Migration 12: the audit entries of a version 11 file get the facility of their record after the
// change, and the feed events written before it for a move (one event, labelled with the old
// facility, carrying the record as it is in the new one) are no longer replayed to anyone.

t.test('migration 12 labels old audit entries with their facility after, and retires old move events', async (t) => {
  const path = join(t.testdir(), 'v11.db')
  const old = new BetterSqlite3(path)
  migrate(old, loadMigrations().slice(0, 11))
  const audit = old.prepare(
    `INSERT INTO audit_log (at, account, facility, resource, record_id, operation, before, after)
     VALUES (1, 'nurse', ?, 'form-templates', ?, ?, ?, ?)`,
  )
  audit.run('A', 'made', 'create', null, '{"id":"made","facility":"A"}')
  audit.run('A', 'moved', 'patch', '{"id":"moved","facility":"A"}', '{"id":"moved","facility":"B"}')
  audit.run(null, 'loose', 'patch', '{"id":"loose"}', '{"id":"loose","name":"x"}')
  audit.run('B', 'gone', 'delete', '{"id":"gone","facility":"B"}', null)
  const feed = old.prepare(
    "INSERT INTO feed_events (at, resource, action, record_id, facility, payload) VALUES (1, ?, ?, ?, 'A', ?)",
  )
  feed.run('form-templates', 'created', 'moved', '{"id":"moved","facility":"A"}')
  feed.run('form-templates', 'patched', 'moved', '{"id":"moved","facility":"B"}')
  feed.run('form-templates', 'patched', 'other', '{"id":"other","facility":"A","name":"kept"}')
  feed.run('ward-occupants', 'created', 'w', '{"id":"w","facility":"A"}')
  old.close()

  const db = openDatabase(path)
  t.teardown(() => db.close())
  t.same(db.prepare('SELECT record_id, facility, facility_after FROM audit_log ORDER BY seq').all(), [
    { record_id: 'made', facility: 'A', facility_after: 'A' },
    { record_id: 'moved', facility: 'A', facility_after: 'B' },
    { record_id: 'loose', facility: null, facility_after: null },
    { record_id: 'gone', facility: 'B', facility_after: 'B' },
  ])
  t.same(
    db.prepare('SELECT seq, record_id FROM feed_events ORDER BY seq').all(),
    [
      { seq: 3, record_id: 'other' },
      { seq: 4, record_id: 'w' },
    ],
    'the kept log starts after the last old move',
  )
  t.equal(db.prepare('SELECT pruned_through FROM feed_state').pluck().get(), 2, 'resuming from before it: reset')
  t.throws(() => db.prepare("UPDATE audit_log SET account = 'x'").run(), /append-only/, 'append-only again')
})
