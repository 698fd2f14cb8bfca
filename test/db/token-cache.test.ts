import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { bearer, buildTestApp } from '../helper.js'

const get = (app: Awaited<ReturnType<typeof buildTestApp>>['app'], token: string) =>
  app.inject({ url: '/ward-occupants', headers: bearer(token) })

t.test('a remembered token still expires on time', async (t) => {
  const { app } = await buildTestApp(t)
  // The clock stands still while the token is used, then moves on: no waiting, and no request
  // that takes long on a busy machine sees the token expire early.
  const realNow = Date.now
  let now = realNow()
  Date.now = () => now
  t.teardown(() => {
    Date.now = realNow
  })
  const { token } = app.tokens.create({ account: 'x', role: 'read', expiresAt: Date.now() + 300 })
  t.equal((await get(app, token)).statusCode, 200)
  t.equal((await get(app, token)).statusCode, 200, 'accepted again (from the cache)')
  now += 350
  const res = await get(app, token)
  t.equal(res.statusCode, 401)
  t.match(res.json().message, /expired/)
})

t.test('a change by another connection (the CLI) counts on the next request', async (t) => {
  const path = join(t.testdir(), 'tokens.db')
  const { app } = await buildTestApp(t, { DATABASE_PATH: path })
  const { token, info } = app.tokens.create({ account: 'x', role: 'write' })
  t.equal((await get(app, token)).statusCode, 200)
  const other = new BetterSqlite3(path)
  t.teardown(() => other.close())
  other.prepare('UPDATE tokens SET role = ? WHERE id = ?').run('read', info.tokenId)
  const post = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(token),
    payload: { encounter: 'e', bed: 'b', occupiedBy: 'p' },
  })
  t.equal(post.statusCode, 403, 'the new role counts at once')
  other.prepare('UPDATE tokens SET revoked_at = 1 WHERE id = ?').run(info.tokenId)
  t.equal((await get(app, token)).statusCode, 401, 'the revocation counts at once')
})

t.test('wrong secrets are never accepted, whatever is remembered', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  t.equal((await get(app, tokens.read)).statusCode, 200)
  const forged = `${tokens.read.slice(0, -4)}AAAA`
  t.equal((await get(app, forged)).statusCode, 401)
  t.equal((await get(app, tokens.read)).statusCode, 200)
})
