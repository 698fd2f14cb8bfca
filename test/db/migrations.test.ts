import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { buildApp } from '../../app.js'
import { defaultConfig } from '../../config.js'
import { openDatabase } from '../../db/connection.js'
import { latestVersion, loadMigrations, migrate, parseMigrations } from '../../db/migrations.js'
import { createTokenRepository } from '../../db/tokens.js'
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
