import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { openDatabase } from '../../db/connection.js'
import { loadMigrations, migrate } from '../../db/migrations.js'
import { createNotificationRepository, type Viewer } from '../../db/repositories/notifications.js'

/** The inbox migration fills its counters and addressee columns from what the database already holds. */

const migrations = loadMigrations()
const inboxIndex = migrations.findIndex((m) => m.title.startsWith('inboxes and counters'))

// Plain SQL of the rule in docs/notifications.md: what the counters must agree with.
const REFERENCE = `SELECT count(*) FROM notifications n
  WHERE (:facility IS NULL OR n.facility = :facility OR (n.facility IS NULL AND n.unbound_only = 0))
    AND (n.broadcast = 1 OR EXISTS (SELECT 1 FROM notification_recipients r WHERE r.account = :account AND r.notification_id = n.id))
    AND (:unseen = 0 OR NOT EXISTS (SELECT 1 FROM notification_seen s WHERE s.account = :account AND s.notification_id = n.id))`

t.test('existing notifications, addressees and marks are counted by the migration', async (t) => {
  t.ok(inboxIndex > 0, 'the inbox migration is found by its title')
  const path = join(t.testdir(), 'before.db')
  const old = new BetterSqlite3(path)
  migrate(old, migrations.slice(0, inboxIndex))
  const insert = old.prepare(
    `INSERT INTO notifications (id, created_at, facility, code, type, title, body, broadcast, recipients, unbound_only)
     VALUES (?, ?, ?, 'c', 't', 'x', 'y', ?, ?, ?)`,
  )
  const recipient = old.prepare('INSERT INTO notification_recipients (account, notification_id) VALUES (?, ?)')
  const mark = old.prepare(
    'INSERT INTO notification_seen (notification_id, account, seen_at, facility) VALUES (?, ?, 1, ?)',
  )
  const facilities = ['A', 'B', null]
  const accounts = ['a1', 'a2', 'a3']
  old.transaction(() => {
    for (let i = 0; i < 300; i++) {
      const id = `n${String(i).padStart(4, '0')}`
      const unboundOnly = i % 11 === 0 ? 1 : 0
      const facility = unboundOnly ? null : (facilities[i % 3] ?? null)
      const to = i % 4 === 0 ? [] : accounts.filter((_, k) => (i >> k) % 2 === 1)
      const addressed = to.length > 0
      insert.run(id, 1 + (i % 17), facility, addressed ? 0 : 1, addressed ? JSON.stringify(to) : null, unboundOnly)
      for (const account of to) recipient.run(account, id)
      // marks on visible and on invisible ones (another account's): only the first count
      for (const [k, account] of accounts.entries()) if ((i + k) % 3 === 0) mark.run(id, account, facilities[k])
    }
  })()
  old.close()

  const db = openDatabase(path)
  t.teardown(() => db.close())
  const repo = createNotificationRepository(db)
  const reference = db.prepare(REFERENCE).pluck()
  for (const account of accounts) {
    for (const facility of facilities) {
      const viewer: Viewer = { account, facility, role: 'read' }
      const name = `${account}@${facility ?? 'none'}`
      t.equal(repo.unseenCount(viewer, {}), reference.get({ account, facility, unseen: 1 }), `${name}: unseen count`)
      t.equal(
        repo.list(viewer, { $limit: '0' }).total,
        reference.get({ account, facility, unseen: 0 }),
        `${name}: total`,
      )
      const ids = db
        .prepare(
          `SELECT n.id FROM notifications n WHERE n.id IN (SELECT value FROM json_each(?)) ORDER BY n.created_at DESC, n.id`,
        )
        .pluck()
      const page = repo.list(viewer, { $sort: { createdAt: '-1' }, $limit: '20', $unseen: 'true' }).records
      const all = repo.list(viewer, { $sort: { createdAt: '-1' }, $limit: '1000', type: 't', $unseen: 'true' })
      t.same(
        page.map((r) => r.id),
        ids.all(JSON.stringify(all.records.map((r) => r.id))).slice(0, 20),
        `${name}: the first unseen page, newest first, is the filtered (general) path's`,
      )
    }
  }
  t.same(
    db.prepare('SELECT count(*) AS n FROM notification_recipients WHERE created_at = 0').get(),
    { n: 0 },
    'every addressee row got its notification time',
  )
})
