import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { openDatabase } from '../../db/connection.js'
import { loadMigrations, migrate } from '../../db/migrations.js'

// The bed-states migration rebuilds the feed's log (its resource CHECK grows): every kept event
// keeps its id, and an id once handed out is never handed out again, even when every event was
// pruned. And a bed left behind by a removed stay (a cancelled admission) leaves the board.

const migrations = loadMigrations()
const bedStates = migrations.findIndex((m) => m.title.startsWith('bed states'))

t.test('the bed-states migration keeps the feed ids and drops phantom beds', async (t) => {
  t.ok(bedStates > 0, 'found by its title')
  const path = join(t.testdir(), 'old.db')
  const old = new BetterSqlite3(path)
  migrate(old, migrations.slice(0, bedStates))
  const admit = old.prepare(
    `INSERT INTO ward_occupants (id, created_at, created_by, facility, encounter, bed, occupied_at, occupied_by)
     VALUES (?, 1, 'n', 'A', ?, ?, 1, 'p')`,
  )
  admit.run('kept', 'E1', 'B1')
  admit.run('cancelled', 'E2', 'B1O')
  old.prepare(`DELETE FROM ward_occupants WHERE id = 'cancelled'`).run()
  t.same(old.prepare('SELECT bed FROM seen_beds ORDER BY bed').pluck().all(), ['B1', 'B1O'], 'the phantom before')
  const feed = old.prepare(
    "INSERT INTO feed_events (at, resource, action, record_id, facility, payload) VALUES (1, 'ward-occupants', 'created', ?, 'A', '{}')",
  )
  for (const id of ['a', 'b', 'c']) feed.run(id)
  old.prepare('DELETE FROM feed_events').run()
  old.prepare('UPDATE feed_state SET pruned_through = 3').run()
  old.close()

  const db = openDatabase(path)
  t.teardown(() => db.close())
  t.same(db.prepare('SELECT bed FROM seen_beds').pluck().all(), ['B1'], 'the bed of a removed stay only is gone')
  t.same(db.prepare('SELECT count(*) FROM feed_events').pluck().get(), 0, 'every event was pruned')
  const next = db
    .prepare(
      "INSERT INTO feed_events (at, resource, action, record_id, facility, payload) VALUES (1, 'bed-states', 'patched', 'B1', 'A', '{}') RETURNING seq",
    )
    .pluck()
    .get()
  t.equal(next, 4, 'after the rebuild an id is never reused, even with the log empty')
})

t.test('the rebuilt feed log keeps each event with its id', async (t) => {
  const path = join(t.testdir(), 'old.db')
  const old = new BetterSqlite3(path)
  migrate(old, migrations.slice(0, bedStates))
  const feed = old.prepare(
    "INSERT INTO feed_events (at, resource, action, record_id, facility, audience, payload) VALUES (?, 'form-templates', 'patched', ?, 'A', ?, '{}')",
  )
  feed.run(5, 'x', 'bound')
  feed.run(6, 'y', null)
  old.close()
  const db = openDatabase(path)
  t.teardown(() => db.close())
  t.same(db.prepare('SELECT seq, at, record_id, audience FROM feed_events ORDER BY seq').all(), [
    { seq: 1, at: 5, record_id: 'x', audience: 'bound' },
    { seq: 2, at: 6, record_id: 'y', audience: null },
  ])
})
