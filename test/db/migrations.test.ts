import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { buildApp } from '../../app.js'
import { defaultConfig } from '../../config.js'
import { openDatabase } from '../../db/connection.js'
import { latestVersion, loadMigrations, migrate, parseMigrations } from '../../db/migrations.js'
import { createTokenRepository } from '../../db/repositories/tokens.js'
import { bearer } from '../helper.js'

t.test('a fresh file gets every migration, WAL and durable commits', async (t) => {
  const path = join(t.testdir(), 'fresh.db')
  const db = openDatabase(path)
  t.teardown(() => db.close())
  t.equal(db.pragma('user_version', { simple: true }), latestVersion())
  t.equal(db.pragma('journal_mode', { simple: true }), 'wal')
  t.equal(db.pragma('synchronous', { simple: true }), 2, 'synchronous=FULL')
  t.equal(db.pragma('foreign_keys', { simple: true }), 1)
})

t.test('an existing database of an older version is migrated and keeps its data', async (t) => {
  const path = join(t.testdir(), 'old.db')
  const old = new BetterSqlite3(path)
  migrate(old, loadMigrations().slice(0, 1))
  t.equal(old.pragma('user_version', { simple: true }), 1)
  const { token } = createTokenRepository(old).create({ account: 'veteran', role: 'write' })
  old.close()

  const app = await buildApp(defaultConfig({ DATABASE_PATH: path, LOG_LEVEL: 'silent' }))
  t.teardown(() => app.close())
  t.equal(app.db.pragma('user_version', { simple: true }), latestVersion())
  const res = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(token),
    payload: { encounter: 'e', bed: 'b', occupiedBy: 'p' },
  })
  t.equal(res.statusCode, 200, 'the old token works on the migrated schema')
})

t.test('a database from a newer build is refused with a clear message', async (t) => {
  const path = join(t.testdir(), 'future.db')
  const future = new BetterSqlite3(path)
  future.pragma(`user_version = ${latestVersion() + 1}`)
  future.close()
  t.throws(() => openDatabase(path), /newer than this build/)
})

t.test('schema.sql sections must count up without gaps', async (t) => {
  t.throws(
    () => parseMigrations('-- migration 1: a\nSELECT 1;\n-- migration 3: c\nSELECT 1;'),
    /migration 3 found where 2/,
  )
  t.same(
    parseMigrations('-- migration 1: a\nSELECT 1;\n').map((m) => [m.version, m.title]),
    [[1, 'a']],
  )
})

t.test('the audit log is append-only', async (t) => {
  const db = openDatabase(':memory:')
  t.teardown(() => db.close())
  db.prepare(
    "INSERT INTO audit_log (at, account, resource, record_id, operation) VALUES (1, 'a', 'r', 'x', 'create')",
  ).run()
  t.throws(() => db.prepare('UPDATE audit_log SET account = ?').run('b'), /append-only/)
  t.throws(() => db.prepare('DELETE FROM audit_log').run(), /append-only/)
})

t.test(
  'migration 6 scopes old notifications of facility-less occupants, keeps the rest, gives old marks a facility',
  async (t) => {
    const path = join(t.testdir(), 'v5.db')
    const old = new BetterSqlite3(path)
    migrate(old, loadMigrations().slice(0, 5))
    t.equal(old.pragma('user_version', { simple: true }), 5)
    const tokens = createTokenRepository(old)
    tokens.create({ account: 'solo-a', role: 'read', facility: 'A' })
    const revoked = tokens.create({ account: 'solo-a', role: 'write', facility: 'A' })
    tokens.revoke(revoked.info.tokenId)
    tokens.create({ account: 'mixed', role: 'read', facility: 'A' })
    tokens.create({ account: 'mixed', role: 'read', facility: 'B' })
    tokens.create({ account: 'half', role: 'read', facility: 'A' })
    tokens.create({ account: 'half', role: 'read' })
    tokens.create({ account: 'rover', role: 'read' })
    old
      .prepare(
        `INSERT INTO notifications (id, created_at, facility, code, type, title, body, broadcast, seen_by)
       VALUES ('n1', 1, NULL, 'c', 't', 'x', 'y', 1, '["solo-a","mixed","half","rover","ghost"]')`,
      )
      .run()
    const ward = old.prepare(
      `INSERT INTO notifications (id, created_at, facility, code, type, title, body, meta, broadcast)
       VALUES (?, 2, ?, 'bed-occupied', 'ward', 'Bed X-1 occupied', 'Encounter e now occupies bed X-1.', ?, 1)`,
    )
    ward.run('w-loose', null, '{"wardOccupantId":"0123456789abcdef01234567","bed":"X-1","encounter":"e"}')
    ward.run('w-of-a', 'A', '{"wardOccupantId":"0123456789abcdef01234568","bed":"A-1","encounter":"e"}')
    ward.run('w-posted', null, '{"note":"posted with notify, names no record"}')
    const mark = old.prepare("INSERT INTO notification_seen (notification_id, account, seen_at) VALUES ('n1', ?, 1)")
    for (const account of ['solo-a', 'mixed', 'half', 'rover', 'ghost']) mark.run(account)
    old.close()

    const db = openDatabase(path)
    t.teardown(() => db.close())
    t.equal(db.pragma('user_version', { simple: true }), latestVersion())
    t.same(
      db.prepare('SELECT id, facility, unbound_only FROM notifications ORDER BY id').all(),
      [
        { id: 'n1', facility: null, unbound_only: 0 },
        { id: 'w-loose', facility: null, unbound_only: 1 },
        { id: 'w-of-a', facility: 'A', unbound_only: 0 },
        { id: 'w-posted', facility: null, unbound_only: 0 },
      ],
      'old notifications of facility-less occupants are for unbound callers only; the rest keep their audience',
    )
    t.same(
      db.prepare('SELECT account, facility FROM notification_seen ORDER BY account').all(),
      [
        { account: 'ghost', facility: null },
        { account: 'half', facility: null },
        { account: 'mixed', facility: null },
        { account: 'rover', facility: null },
        { account: 'solo-a', facility: 'A' },
      ],
      'only an account whose every token is of one facility gets it; unknown stays for unbound callers only',
    )
    t.throws(
      () =>
        db
          .prepare(
            `INSERT INTO notifications (id, created_at, facility, code, type, title, body, broadcast, unbound_only)
           VALUES ('n2', 1, 'A', 'c', 't', 'x', 'y', 1, 1)`,
          )
          .run(),
      /CHECK constraint failed/,
      'a notification for unbound callers only has no facility',
    )
    const indexes = db
      .prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'notifications'")
      .pluck()
    t.ok(indexes.all().includes('notifications_audience'))
    t.notOk(indexes.all().includes('notifications_broadcast'), 'the old audience index is replaced')
  },
)
