import t from 'tap'
import { bearer, buildTestApp } from '../../helper.js'

const admit = { encounter: 'enc-1', bed: 'B-1', occupiedBy: 'patient-1' }

t.test('requests without a valid token get 401 with WWW-Authenticate: Bearer', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const [id, secret] = tokens.read.slice(3).split('_') as [string, string]
  const cases: [string, Record<string, string>, string][] = [
    ['missing header', {}, 'FST_BEARER_AUTH_MISSING_AUTHORIZATION_HEADER'],
    ['basic scheme', { authorization: 'Basic dXNlcjpwYXNz' }, 'FST_BEARER_AUTH_INVALID_AUTHORIZATION_HEADER'],
    ['empty bearer', { authorization: 'Bearer ' }, 'TOKEN_REJECTED'],
    ['malformed token', bearer('not-a-token'), 'TOKEN_REJECTED'],
    ['unknown id', bearer(`fs_${'0'.repeat(24)}_${secret}`), 'TOKEN_REJECTED'],
    ['wrong secret', bearer(`fs_${id}_${'A'.repeat(43)}`), 'TOKEN_REJECTED'],
  ]
  for (const [name, headers, code] of cases) {
    const res = await app.inject({ method: 'GET', url: '/ward-occupants', headers })
    t.equal(res.statusCode, 401, name)
    t.match(res.headers['www-authenticate'], /^Bearer/, `${name}: challenge`)
    t.match(res.json(), { statusCode: 401, error: 'Unauthorized', code }, `${name}: body`)
  }
})

t.test('the scheme name is case-insensitive, the token is not', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
    const res = await app.inject({ url: '/ward-occupants', headers: { authorization: `${scheme} ${tokens.read}` } })
    t.equal(res.statusCode, 200, scheme)
  }
  const shouted = await app.inject({ url: '/ward-occupants', headers: bearer(tokens.read.toUpperCase()) })
  t.equal(shouted.statusCode, 401, 'the token itself must match exactly')
  const glued = await app.inject({ url: '/ward-occupants', headers: { authorization: `Bearer${tokens.read}` } })
  t.equal(glued.statusCode, 401, 'a space separates scheme and token')
})

t.test('an expired token is refused, a valid one accepted', async (t) => {
  const { app } = await buildTestApp(t)
  const expired = app.tokens.create({ account: 'x', role: 'read', expiresAt: Date.now() - 1 }).token
  const res = await app.inject({ method: 'GET', url: '/ward-occupants', headers: bearer(expired) })
  t.equal(res.statusCode, 401)
  t.match(res.json().message, /expired/)
  const later = app.tokens.create({ account: 'x', role: 'read', expiresAt: Date.now() + 60_000 }).token
  t.equal((await app.inject({ method: 'GET', url: '/ward-occupants', headers: bearer(later) })).statusCode, 200)
})

t.test('a revoked token fails on the very next request', async (t) => {
  const { app } = await buildTestApp(t)
  const { token, info } = app.tokens.create({ account: 'x', role: 'read' })
  t.equal((await app.inject({ method: 'GET', url: '/ward-occupants', headers: bearer(token) })).statusCode, 200)
  t.ok(app.tokens.revoke(info.tokenId))
  const res = await app.inject({ method: 'GET', url: '/ward-occupants', headers: bearer(token) })
  t.equal(res.statusCode, 401)
  t.match(res.json().message, /revoked/)
  t.notOk(app.tokens.revoke(info.tokenId), 'revoking twice reports nothing to revoke')
})

t.test('roles: read may only read, write may not administer, admin may do all', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const post = (token: string) =>
    app.inject({ method: 'POST', url: '/ward-occupants', headers: bearer(token), payload: admit })
  const readPost = await post(tokens.read)
  t.equal(readPost.statusCode, 403)
  t.match(readPost.json(), { code: 'ROLE_FORBIDDEN' })
  t.equal((await app.inject({ method: 'GET', url: '/ward-occupants', headers: bearer(tokens.read) })).statusCode, 200)
  const writeAudit = await app.inject({ method: 'GET', url: '/audit', headers: bearer(tokens.write) })
  t.equal(writeAudit.statusCode, 403)
  t.equal((await post(tokens.admin)).statusCode, 200, 'admin can write')
  t.equal((await app.inject({ method: 'GET', url: '/audit', headers: bearer(tokens.admin) })).statusCode, 200)
})

t.test('the role is checked before the body is validated', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const res = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(tokens.read),
    payload: { nonsense: 1 },
  })
  t.equal(res.statusCode, 403)
})

t.test('health, the OpenAPI document and the docs page need no token', async (t) => {
  const { app } = await buildTestApp(t)
  t.same((await app.inject('/health')).json(), { status: 'ok', database: 'ok' })
  const doc = (await app.inject('/openapi.json')).json()
  t.ok(doc.paths['/ward-occupants'], 'ward occupants documented')
  t.same(doc.components.securitySchemes.bearerAuth, { type: 'http', scheme: 'bearer', description: 'an API token' })
  t.same(
    doc.paths['/health'].get.security,
    [{}, { bearerAuth: [] }],
    'health is public; a token is optional (admin: details)',
  )
  t.equal((await app.inject('/docs/')).statusCode, 200)
})

t.test('normal traffic is rate limited per token when a limit is set', async (t) => {
  const { app, tokens } = await buildTestApp(t, { RATE_LIMIT_MAX: 2 })
  for (let i = 0; i < 2; i++) {
    t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(tokens.read) })).statusCode, 200)
  }
  const limited = await app.inject({ url: '/ward-occupants', headers: bearer(tokens.read) })
  t.equal(limited.statusCode, 429)
  t.match(limited.json(), { statusCode: 429, error: 'Too Many Requests', code: 'RATE_LIMITED' })
  t.ok(limited.headers['retry-after'])
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(tokens.write) })).statusCode, 200, 'other token')
})

t.test('the 429 names the configured window, and the wait as Retry-After does', async (t) => {
  for (const [windowMs, window] of [
    [60_000, '60'],
    [90_000, '90'],
    [2_500, '2.5'],
  ] as const) {
    const { app, tokens } = await buildTestApp(t, { RATE_LIMIT_MAX: 1, RATE_LIMIT_WINDOW_MS: windowMs })
    await app.inject({ url: '/ward-occupants', headers: bearer(tokens.read) })
    const limited = await app.inject({ url: '/ward-occupants', headers: bearer(tokens.read) })
    t.equal(limited.statusCode, 429)
    const wait = Number(limited.headers['retry-after'])
    t.ok(wait >= 1 && wait <= Math.ceil(windowMs / 1000), `Retry-After ${wait} is within the window`)
    t.equal(
      limited.json().message,
      `rate limit of 1 requests per ${window} seconds exceeded; retry in ${wait} seconds`,
      `window ${windowMs} ms`,
    )
  }
})

t.test('tokens are stored hashed, never in clear', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const secret = tokens.admin.split('_').slice(2).join('_')
  const dump = JSON.stringify(app.db.prepare('SELECT * FROM tokens').all())
  t.notOk(dump.includes(secret), 'no secret in the tokens table')
  t.notOk(dump.includes(tokens.admin))
})
