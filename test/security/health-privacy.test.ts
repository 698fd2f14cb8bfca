import { rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { bearer, buildTestApp, dirRemovedLast, type TestApp, type TestTokens } from '../helper.js'
import { until } from '../reliability/fault-helpers.js'

/**
 * GET /health answers without a token (load balancers, service managers), and its details carry
 * texts that name the backup directory, the replica's host, files: without an admin token it tells
 * the status of each check and nothing else (docs/API.md). Every caller that is not the operator's
 * admin, a bad token included, gets exactly the anonymous answer.
 */

const HIDDEN_PLACE = 'ward-7-backups-hidden-place'

/** The headers of every caller that must get the status only, by name. */
function nonAdmins(app: TestApp, tokens: TestTokens): Record<string, Record<string, string>> {
  const [id] = /fs_[0-9a-f]{24}_/.exec(tokens.admin) ?? ['fs_']
  return {
    anonymous: {},
    'a read token': bearer(tokens.read),
    'a write token': bearer(tokens.write),
    "a facility's admin": bearer(tokens.adminA),
    "the admin's id with a wrong secret": bearer(`${id}${'x'.repeat(43)}`),
    'a malformed header': { authorization: 'Bearer' },
    'another scheme': { authorization: `Basic ${tokens.admin}` },
    'a revoked admin token': bearer(revokedAdmin(app)),
    "a blocked account's admin token": bearer(blockedAdmin(app)),
  }
}

function blockedAdmin(app: TestApp): string {
  const { token } = app.tokens.create({ account: 'blocked-admin', role: 'admin', facility: null, label: null })
  app.repos.blockedAccounts.block('blocked-admin', 'left')
  return token
}

function revokedAdmin(app: TestApp): string {
  const { token, info } = app.tokens.create({ account: 'old-admin', role: 'admin', facility: null, label: null })
  app.tokens.revoke(info.tokenId)
  return token
}

t.test('a failing backup: its text goes to an admin only; everyone else gets { ok: false }', async (t) => {
  const dir = t.testdir({ [HIDDEN_PLACE]: {} })
  const backups = join(dir, HIDDEN_PLACE)
  const { app, tokens } = await buildTestApp(t, { DATABASE_PATH: join(dir, 'ward.db'), BACKUP_DIR: backups })
  await until(() => app.backups.status()?.last !== null)
  rmSync(backups, { recursive: true })
  await app.backups.runNow()
  t.not(app.backups.status()?.failing ?? null, null, 'the backup fails')

  const admin = await app.inject({ url: '/health', headers: bearer(tokens.admin) })
  t.equal(admin.statusCode, 200)
  t.type(admin.json().backups.failing.message, 'string', 'the admin reads why')
  t.equal(admin.headers['cache-control'], 'no-store', 'the details are kept by no cache')
  t.match(admin.headers.vary, /authorization/i)

  for (const [who, headers] of Object.entries(nonAdmins(app, tokens))) {
    const res = await app.inject({ url: '/health', headers })
    t.equal(res.statusCode, 200, `${who}: 200`)
    t.same(res.json(), { status: 'ok', database: 'ok', backups: { ok: false } }, `${who}: the status only`)
    t.notOk(res.body.includes(HIDDEN_PLACE) || res.body.includes(dir), `${who}: no path`)
  }
})

t.test('a healthy service with backups: every check ok, no time or file told without a token', async (t) => {
  const dir = t.testdir({ backups: {} })
  const { app, tokens } = await buildTestApp(t, {
    DATABASE_PATH: join(dir, 'ward.db'),
    BACKUP_DIR: join(dir, 'backups'),
  })
  await until(() => app.backups.status()?.last !== null)
  t.same((await app.inject('/health')).json(), { status: 'ok', database: 'ok', backups: { ok: true } })
  t.match((await app.inject({ url: '/health', headers: bearer(tokens.admin) })).json(), {
    status: 'ok',
    backups: { lastAt: Number, ageMs: Number },
  })
})

t.test('an unhealthy database: the fault and its code for everyone, its text for an admin', async (t) => {
  const { app, tokens } = await buildTestApp(t, { DATABASE_PATH: join(t.testdir(), 'full.db') })
  const pages = app.db.pragma('page_count', { simple: true }) as number
  app.db.pragma(`max_page_count = ${pages + 8}`)
  let full = false
  for (let i = 0; i < 2000 && !full; i++) {
    const res = await app.inject({
      method: 'POST',
      url: '/ward-occupants',
      headers: bearer(tokens.write),
      payload: {
        encounter: `e-${i}`,
        bed: `B-${i}`,
        occupiedBy: 'p',
        room: 'r'.repeat(200),
        provider: 'd'.repeat(200),
      },
    })
    full = res.statusCode === 507
  }
  t.ok(full, 'the disk is full')
  const admin = await app.inject({ url: '/health', headers: bearer(tokens.admin) })
  t.equal(admin.statusCode, 503)
  t.match(admin.json(), {
    status: 'unavailable',
    database: 'full',
    code: 'SQLITE_FULL',
    message: String,
    since: Number,
  })
  for (const [who, headers] of Object.entries(nonAdmins(app, tokens))) {
    const res = await app.inject({ url: '/health', headers })
    t.equal(res.statusCode, 503, `${who}: 503`)
    t.same(res.json(), { status: 'unavailable', database: 'full', code: 'SQLITE_FULL' }, `${who}: no text`)
  }
})

/** A local port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

t.test("Litestream's dial error (a host and a port) goes to an admin only", async (t) => {
  const port = await closedPort()
  const dir = dirRemovedLast(t, 'health-privacy')
  const { app, tokens } = await buildTestApp(t, {
    DATABASE_PATH: join(dir, 'ward.db'),
    REPLICA_URL: `sftp://repl@127.0.0.1:${port}/replicas/ward`,
  })
  const admin = () => app.inject({ url: '/health', headers: bearer(tokens.admin) })
  await until(() => app.replication.status()?.failing != null)
  const detailed = (await admin()).json()
  t.match(detailed.replication.failing.message, new RegExp(`127\\.0\\.0\\.1:${port}`), 'the admin reads the host')
  for (const [who, headers] of Object.entries(nonAdmins(app, tokens))) {
    const res = await app.inject({ url: '/health', headers })
    t.same(res.json(), { status: 'ok', database: 'ok', replication: { ok: false } }, `${who}: the status only`)
    t.notOk(res.body.includes('127.0.0.1'), `${who}: no host`)
  }
})
