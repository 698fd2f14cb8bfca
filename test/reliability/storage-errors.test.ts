import { closeSync, openSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { bearer } from '../helper.js'
import { buildLoggedApp } from './fault-helpers.js'

const occupant = { encounter: 'e-1', bed: 'B-1', occupiedBy: 'p' }

/** Overwrites the first page of `table` with garbage (the file closed cleanly: no -wal). */
function damageRootPage(path: string, table: string): void {
  const plain = new BetterSqlite3(path, { readonly: true })
  const root = plain.prepare('SELECT rootpage FROM sqlite_schema WHERE name = ?').pluck().get(table) as number
  const pageSize = plain.pragma('page_size', { simple: true }) as number
  plain.close()
  const fd = openSync(path, 'r+')
  writeSync(fd, Buffer.alloc(pageSize, 0xa5), 0, pageSize, (root - 1) * pageSize)
  closeSync(fd)
}

t.test(
  'a read-only database: 503 STORAGE_READ_ONLY, /health 503, one error log; writable again, all is well',
  async (t) => {
    const path = join(t.testdir(), 'ro.db')
    const { app, token, errors } = await buildLoggedApp(t, { DATABASE_PATH: path })
    const write = bearer(token('nurse', 'write'))
    // What a file, folder or file system that cannot be written does to SQLite's writes.
    app.db.pragma('query_only = ON')
    for (let i = 0; i < 3; i++) {
      const res = await app.inject({ method: 'POST', url: '/ward-occupants', headers: write, payload: occupant })
      t.equal(res.statusCode, 503)
      t.match(res.json(), { code: 'STORAGE_READ_ONLY', message: /cannot be written/ })
      t.ok(res.headers['retry-after'])
    }
    t.match((await app.inject('/health')).json(), {
      status: 'unavailable',
      database: 'readonly',
      code: 'SQLITE_READONLY',
    })
    t.equal(errors().length, 1, 'one error log, naming the file and the cause')
    t.match(errors()[0], { file: path, code: 'SQLITE_READONLY', msg: new RegExp(`^${path}: `) })
    t.equal((await app.inject({ url: '/ward-occupants', headers: write })).statusCode, 200, 'reads go on')
    app.db.pragma('query_only = OFF')
    const res = await app.inject({ method: 'POST', url: '/ward-occupants', headers: write, payload: occupant })
    t.equal(res.statusCode, 200)
    t.equal((await app.inject('/health')).statusCode, 200)
  },
)

t.test('an I/O error: 503 STORAGE_IO_ERROR, /health 503 until a write succeeds, one log', async (t) => {
  const path = join(t.testdir(), 'io.db')
  const { app, token, errors } = await buildLoggedApp(t, { DATABASE_PATH: path })
  const write = bearer(token('nurse', 'write'))
  // SQLite's error for a failed write(2) or fsync, as better-sqlite3 throws it.
  const ioError = Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR_FSYNC' })
  for (let i = 0; i < 3; i++)
    await t.rejects(
      app.writes.run(() => {
        throw ioError
      }),
    )
  // The fault's text is for an admin (docs/API.md); everyone gets its word and code.
  const health = await app.inject({ url: '/health', headers: bearer(token('admin-1', 'admin')) })
  t.equal(health.statusCode, 503)
  t.match(health.json(), { database: 'io', code: 'SQLITE_IOERR_FSYNC', message: /I\/O error/ })
  t.equal(errors().length, 1)
  t.match(errors()[0], { file: path, fault: 'io' })
  t.equal(
    (await app.inject({ method: 'POST', url: '/ward-occupants', headers: write, payload: occupant })).statusCode,
    200,
  )
  t.equal((await app.inject('/health')).statusCode, 200, 'a write that worked ends the episode')
})

t.test('a damaged file: 503 STORAGE_CORRUPT on what touches the damage, writes refused, /health 503', async (t) => {
  const path = join(t.testdir(), 'corrupt.db')
  {
    const { app, token } = await buildLoggedApp(t, { DATABASE_PATH: path })
    const write = bearer(token('nurse', 'write'))
    for (let i = 0; i < 40; i++) {
      const payload = { encounter: `e-${i}`, bed: `B-${i}`, occupiedBy: 'p', room: 'r'.repeat(200) }
      await app.inject({ method: 'POST', url: '/ward-occupants', headers: write, payload })
    }
    await app.close()
  }
  damageRootPage(path, 'ward_occupants')

  const { app, token, errors } = await buildLoggedApp(t, { DATABASE_PATH: path })
  const write = bearer(token('nurse-2', 'write'))
  const list = await app.inject({ url: '/ward-occupants', headers: write })
  t.equal(list.statusCode, 503)
  t.match(list.json(), { code: 'STORAGE_CORRUPT', message: /damaged/ })
  t.notMatch(list.body, /SQLITE|malformed/, 'no SQLite internals in the answer')
  t.match((await app.inject('/health')).json(), { database: 'corrupt', code: /^SQLITE_CORRUPT/ })
  const created = await app.inject({ method: 'POST', url: '/form-templates', headers: write, payload: { type: 'x' } })
  t.equal(created.statusCode, 503, 'writes are refused, even where the damage is not')
  t.equal(created.json().code, 'STORAGE_CORRUPT')
  t.equal((await app.inject({ url: '/form-templates', headers: write })).statusCode, 200, 'undamaged reads go on')
  t.equal(errors().length, 1, 'one error log')
  t.match(errors()[0], { file: path, fault: 'corrupt' })
})

t.test("/health with the operator's token on a damaged tokens table: 503 without details, not 500", async (t) => {
  const path = join(t.testdir(), 'tokens-damaged.db')
  let admin: string
  {
    const { app, token } = await buildLoggedApp(t, { DATABASE_PATH: path })
    admin = token('operator', 'admin')
    // Enough tokens that the table has pages of its own beyond its root.
    for (let i = 0; i < 40; i++) token(`nurse-${i}`, 'write')
    await app.close()
  }
  damageRootPage(path, 'tokens')

  const { app } = await buildLoggedApp(t, { DATABASE_PATH: path })
  const health = await app.inject({ url: '/health', headers: bearer(admin) })
  t.equal(health.statusCode, 503, 'the token cannot be read: the status alone, as for anyone')
  t.match(health.json(), { status: 'unavailable', database: 'corrupt' })
  t.notOk('message' in health.json(), 'no details for a token that could not be checked')
})

t.test(
  '/health with a token whose check fails for another reason: 503 for that request, logged without the token',
  async (t) => {
    const { app, token, errors } = await buildLoggedApp(t, { DATABASE_PATH: join(t.testdir(), 'check-fails.db') })
    const admin = token('operator', 'admin')
    const check = app.tokens.check
    // Not a storage fault: a defect in the check, or a table the restore did not bring back.
    app.tokens.check = () => {
      throw new TypeError('the check broke')
    }
    t.teardown(() => {
      app.tokens.check = check
    })
    const health = await app.inject({ url: '/health', headers: bearer(admin) })
    t.equal(health.statusCode, 503, 'every authenticated request would fail now: not ok')
    t.same(health.json(), { status: 'unavailable', database: 'unreachable' }, 'the status alone')
    const logged = errors()
    t.equal(logged.length, 1, 'one error log')
    t.match(logged[0], { msg: 'health: the token check failed', err: { message: 'the check broke' } })
    t.notOk(JSON.stringify(logged).includes(admin), 'the token never reaches the log')
    t.equal((await app.inject('/health')).statusCode, 200, 'without a token nothing is checked')
    app.tokens.check = check
    t.equal((await app.inject({ url: '/health', headers: bearer(admin) })).statusCode, 200, 'the check works again: ok')
  },
)
