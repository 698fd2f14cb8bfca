import { createPublicKey } from 'node:crypto'
import { SignJWT } from 'jose'
import t from 'tap'
import { newKey, OTHER_API, publicJwk, SCRIPT_CLIENT, type TestProvider } from './provider.js'
import { bearer, buildOidcApp, personToken, scriptToken, startTestProvider } from './setup.js'

// Access tokens of a real OpenID provider (oidc-provider on 127.0.0.1) accepted beside the
// service's own: each role works as a service token of that role does, and every way a token can
// be wrong is refused with 401 and `WWW-Authenticate: Bearer` (contract §3).

const occupant = (n: number, facility?: string) => ({
  encounter: `enc-${n}`,
  bed: `bed-${n}`,
  occupiedBy: 'patient-1',
  room: 'R-1',
  ...(facility === undefined ? {} : { facility }),
})

function b64(value: object): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url')
}

t.test('a client-credentials token from the provider, per role', async (t) => {
  const provider = await startTestProvider(t)
  const { app } = await buildOidcApp(t, provider)

  const viewer = await scriptToken(provider, ['ward-viewer'], 'A')
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(viewer) })).statusCode, 200, 'read may list')
  const denied = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(viewer),
    payload: occupant(1),
  })
  t.equal(denied.statusCode, 403)
  t.equal(denied.json().code, 'ROLE_FORBIDDEN')

  const nurse = await scriptToken(provider, ['ward-nurse'], 'A')
  const created = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(nurse),
    payload: occupant(2),
  })
  t.equal(created.statusCode, 200, created.body)
  t.match(
    created.json(),
    { createdBy: `oidc:${SCRIPT_CLIENT.id}`, facility: 'A' },
    'createdBy is oidc: and the account claim (sub)',
  )
  t.equal((await app.inject({ url: '/audit', headers: bearer(nurse) })).statusCode, 403, 'write is not admin')

  const both = await scriptToken(provider, ['ward-viewer', 'ward-admin', 'ward-nurse'], 'A')
  const audit = await app.inject({ url: '/audit', headers: bearer(both) })
  t.equal(audit.statusCode, 200, 'several provider roles: the highest wins')
  t.ok(
    audit.json().entries.some((e: { account: string }) => e.account === `oidc:${SCRIPT_CLIENT.id}`),
    'the audit names the provider account',
  )
})

t.test('the account comes from OIDC_ACCOUNT_CLAIM', async (t) => {
  const provider = await startTestProvider(t)
  const { app } = await buildOidcApp(t, provider, { OIDC_ACCOUNT_CLAIM: 'preferred_username' })
  const token = await personToken(provider, 'uuid-1', ['ward-nurse'], 'A', { preferred_username: 'ann.nurse' })
  const res = await app.inject({ method: 'POST', url: '/ward-occupants', headers: bearer(token), payload: occupant(3) })
  t.equal(res.statusCode, 200, res.body)
  t.equal(res.json().createdBy, 'oidc:ann.nurse')
  const none = await personToken(provider, 'uuid-2', ['ward-nurse'], 'A')
  const refused = await app.inject({ url: '/ward-occupants', headers: bearer(none) })
  t.equal(refused.statusCode, 403)
  t.match(refused.json().message, /preferred_username/)
})

t.test('OIDC_ACCOUNT_CLAIM=upn,oid: an app-only token without upn is its oid (Entra ID)', async (t) => {
  const provider = await startTestProvider(t)
  const { app } = await buildOidcApp(t, provider, { OIDC_ACCOUNT_CLAIM: 'upn, oid' })
  // The client-credentials grant, as a script gets it: no upn, the app's object id in oid.
  provider.claims.set(SCRIPT_CLIENT.id, { realm_access: { roles: ['ward-nurse'] }, facility: 'A', oid: 'app-guid-1' })
  const script = await provider.clientCredentials()
  const created = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(script),
    payload: occupant(5),
  })
  t.equal(created.statusCode, 200, created.body)
  t.equal(created.json().createdBy, 'oidc:app-guid-1')
  const person = await personToken(provider, 'uuid-3', ['ward-nurse'], 'A', { upn: 'ann@hospital.example', oid: 'g2' })
  const byPerson = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(person),
    payload: occupant(6),
  })
  t.equal(byPerson.json().createdBy, 'oidc:ann@hospital.example', 'a person: the upn first')
  const neither = await personToken(provider, 'uuid-4', ['ward-nurse'], 'A')
  const refused = await app.inject({ url: '/ward-occupants', headers: bearer(neither) })
  t.equal(refused.statusCode, 403)
  t.match(refused.json(), { code: 'CLAIM_REFUSED', message: /`upn` or `oid`/ })
})

/** Tokens no check may let through, each made the way an attacker or a misconfiguration would. */
async function badTokens(provider: TestProvider): Promise<[string, string, RegExp][]> {
  const now = Math.floor(Date.now() / 1000)
  const good = { sub: 'mallory', realm_access: { roles: ['ward-admin'] }, facility: 'A' }
  const valid = await provider.sign(good)
  const [header, , signature] = valid.split('.')
  const key = provider.keys[0] as NonNullable<TestProvider['keys'][0]>
  const pem = createPublicKey({ key: publicJwk(key), format: 'jwk' } as never)
    .export({ type: 'spki', format: 'pem' })
    .toString()
  const hmacWithPublicKey = await new SignJWT({ ...good, iss: provider.issuer, aud: 'api://ward', exp: now + 300 })
    .setProtectedHeader({ alg: 'HS256', kid: key.kid })
    .sign(new TextEncoder().encode(pem))
  const stranger = await newKey('stranger')
  return [
    ['expired (past the clock skew)', await provider.sign({ ...good, exp: now - 120 }), /expired/],
    ['not yet valid (nbf past the clock skew)', await provider.sign({ ...good, nbf: now + 120 }), /nbf/],
    ['another issuer', await provider.sign({ ...good, iss: 'http://127.0.0.1:1' }), /iss/],
    ['the issuer with a trailing slash', await provider.sign({ ...good, iss: `${provider.issuer}/` }), /iss/],
    [
      'for another API (issued by the provider)',
      await scriptToken(provider, ['ward-admin'], 'A').then(() => provider.clientCredentials(OTHER_API)),
      /aud/,
    ],
    ['without exp', await provider.sign({ ...good, exp: undefined }), /exp/],
    ['valid for ten years', await provider.sign({ ...good, exp: now + 10 * 365 * 86_400 }), /longer than this/],
    [
      'valid for ten years, without iat',
      await provider.sign({ ...good, iat: undefined, exp: now + 10 * 365 * 86_400 }),
      /longer than this/,
    ],
    ['issued a year ahead', await provider.sign({ ...good, iat: now + 365 * 86_400, exp: now + 300 }), /iat.*future/],
    ['issued past the clock skew ahead', await provider.sign({ ...good, iat: now + 120 }), /iat.*future/],
    [
      'alg none',
      `${b64({ alg: 'none', kid: key.kid })}.${b64({ ...good, iss: provider.issuer, aud: 'api://ward', exp: now + 300 })}.`,
      /algorithm/,
    ],
    ['HS256 with the public key as the secret', hmacWithPublicKey, /algorithm/],
    ['signed by a key the provider does not have (unknown kid)', await provider.sign(good, { key: stranger }), /kid/],
    ['a known kid, another key', await provider.sign(good, { key: { ...stranger, kid: key.kid } }), /not valid/],
    [
      'a changed payload',
      `${header}.${b64({ ...good, facility: 'B', iss: provider.issuer, aud: 'api://ward', exp: now + 300 })}.${signature}`,
      /not valid/,
    ],
    ['not a JWT', 'eyJhbGciOi.not-a-token', /malformed/],
  ]
}

t.test('refused provider tokens: 401 with WWW-Authenticate: Bearer, and a reason', async (t) => {
  const provider = await startTestProvider(t)
  const { app } = await buildOidcApp(t, provider, { OIDC_KEY_COOLDOWN_SECONDS: 0 })
  // A good token first, so it is remembered: a forgery made from it (same signature, other
  // payload) must not be taken for it.
  const first = await personToken(provider, 'mallory', ['ward-admin'], 'A')
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(first) })).statusCode, 200)
  for (const [name, token, reason] of await badTokens(provider)) {
    const res = await app.inject({ url: '/ward-occupants', headers: bearer(token) })
    t.equal(res.statusCode, 401, `${name}: 401 (${res.body})`)
    t.match(res.headers['www-authenticate'], /^Bearer/, `${name}: WWW-Authenticate`)
    t.match(res.json(), { code: 'TOKEN_REJECTED', message: reason }, `${name}: says why`)
  }
  const [head, body, signature] = first.split('.') as [string, string, string]
  const moved = { ...JSON.parse(Buffer.from(body, 'base64url').toString()), facility: 'B' }
  const forged = await app.inject({ url: '/ward-occupants', headers: bearer(`${head}.${b64(moved)}.${signature}`) })
  t.equal(forged.statusCode, 401, 'the payload of a remembered token changed: refused')
  // The same good token is accepted, so the refusals above are the checks', not a broken setup.
  const good = await personToken(provider, 'ann', ['ward-admin'], 'A')
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(good) })).statusCode, 200)
})

t.test('OIDC_MAX_TOKEN_LIFETIME_SECONDS: the longest lifetime accepted; iat within the clock skew', async (t) => {
  const provider = await startTestProvider(t)
  const { app } = await buildOidcApp(t, provider, { OIDC_MAX_TOKEN_LIFETIME_SECONDS: 3600 })
  const now = Math.floor(Date.now() / 1000)
  const claims = { realm_access: { roles: ['ward-nurse'] }, facility: 'A' }
  const status = async (sub: string, times: Record<string, unknown>) =>
    (await app.inject({ url: '/ward-occupants', headers: bearer(await provider.sign({ sub, ...claims, ...times })) }))
      .statusCode
  t.equal(await status('a', { iat: now, exp: now + 3600 }), 200, 'exactly the cap')
  t.equal(await status('b', { iat: now, exp: now + 3601 }), 401, 'a second more')
  t.equal(await status('c', { iat: now - 7000, exp: now + 60 }), 401, 'issued for two hours, whatever is left')
  t.equal(await status('d', { iat: undefined, exp: now + 3600 }), 200, 'without iat: exp - now')
  t.equal(await status('e', { iat: undefined, exp: now + 7200 }), 401, 'without iat, past the cap')
  t.equal(await status('f', { iat: now + 20, exp: now + 320 }), 200, 'iat ahead within the clock skew (30 s)')
})

t.test('claims that give no role, or no facility, are a 403 naming the claim', async (t) => {
  const provider = await startTestProvider(t)
  const { app } = await buildOidcApp(t, provider)
  const noRole = await scriptToken(provider, ['cleaner'], 'A')
  const res = await app.inject({ url: '/ward-occupants', headers: bearer(noRole) })
  t.equal(res.statusCode, 403)
  t.match(res.json(), { code: 'CLAIM_REFUSED', message: /realm_access\.roles/ })
  const noClaim = await personToken(provider, 'ann', [], 'A', { realm_access: undefined })
  t.match((await app.inject({ url: '/ward-occupants', headers: bearer(noClaim) })).json(), {
    code: 'CLAIM_REFUSED',
    message: /realm_access\.roles/,
  })
  const noFacility = await scriptToken(provider, ['ward-nurse'])
  const unbound = await app.inject({ url: '/ward-occupants', headers: bearer(noFacility) })
  t.equal(unbound.statusCode, 403)
  t.match(unbound.json(), { code: 'CLAIM_REFUSED', message: /`facility`/ })
})

t.test('OIDC_ALLOW_UNBOUND: a token without a facility works across facilities', async (t) => {
  const provider = await startTestProvider(t)
  const { app } = await buildOidcApp(t, provider, { OIDC_ALLOW_UNBOUND: true })
  const token = await scriptToken(provider, ['ward-nurse'])
  const res = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(token),
    payload: occupant(4, 'B'),
  })
  t.equal(res.statusCode, 200, res.body)
  t.equal(res.json().facility, 'B', 'an unbound caller may name the facility')
})

t.test('provider tokens count against the bad-token throttle; a valid one is never refused for it', async (t) => {
  const provider = await startTestProvider(t)
  const { app } = await buildOidcApp(t, provider, { AUTH_FAILURE_LIMIT: 3 })
  const forged = await provider.sign({
    sub: 'x',
    realm_access: { roles: ['ward-admin'] },
    facility: 'A',
    iss: 'http://evil',
  })
  const codes = []
  for (let i = 0; i < 5; i++)
    codes.push((await app.inject({ url: '/ward-occupants', headers: bearer(forged) })).statusCode)
  t.same(codes, [401, 401, 401, 429, 429])
  const good = await scriptToken(provider, ['ward-viewer'], 'A')
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(good) })).statusCode, 200)
})

t.test('no provider token, nor the client secret, reaches the log', async (t) => {
  const provider = await startTestProvider(t)
  const { app, log } = await buildOidcApp(t, provider)
  const tokens = [await scriptToken(provider, ['ward-nurse'], 'A'), ...(await badTokens(provider)).map(([, tk]) => tk)]
  for (const token of tokens) {
    await app.inject({ url: '/ward-occupants', headers: bearer(token) })
    await app.inject({ method: 'POST', url: '/events/tickets', headers: bearer(token) })
  }
  t.ok(log.lines.length > 10, 'the requests were logged')
  const all = log.lines.join('')
  for (const token of tokens) {
    const signature = token.split('.')[2] ?? ''
    t.notOk(all.includes(token), 'no token in the log')
    if (signature.length > 10) t.notOk(all.includes(signature), 'nor its signature')
  }
  t.notOk(all.includes(SCRIPT_CLIENT.secret))
})
