import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { operatorHealth } from '../helper.js'
import { newKey, publicJwk, startProvider } from './provider.js'
import { bearer, buildOidcApp, personToken, startTestProvider } from './setup.js'

// The provider's keys: fetched at the start, kept while the provider is down, fetched again for a
// new `kid` (a rotation), read from OIDC_JWKS_FILE instead; with none at all the service starts,
// /health says so, and service tokens work.

const nurse = (provider: Parameters<typeof personToken>[0], account = 'ann') =>
  personToken(provider, account, ['ward-nurse'], 'A')

t.test('the provider down after the start: tokens signed with the keys held keep working', async (t) => {
  const provider = await startTestProvider(t)
  const { app } = await buildOidcApp(t, provider, { OIDC_KEY_COOLDOWN_SECONDS: 0 })
  const before = await nurse(provider)
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(before) })).statusCode, 200)
  await provider.close()
  // A token never seen before, so it is verified now, with the kept key.
  const after = await nurse(provider, 'bob')
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(after) })).statusCode, 200)
  // An unknown kid makes it try the provider, which fails: refused, and the keys are kept.
  const stranger = await provider.sign({ sub: 'x' }, { key: await newKey('new-kid') })
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(stranger) })).statusCode, 401)
  const health = (await operatorHealth(app)).json()
  t.match(health, { status: 'ok', identityProvider: { keys: 1, failing: { message: /ECONNREFUSED/ } } })
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(await nurse(provider, 'cy')) })).statusCode, 200)
})

t.test('no keys at the start: the service starts, /health says so, only service tokens work', async (t) => {
  const provider = await startTestProvider(t)
  await provider.close()
  const { app, admin } = await buildOidcApp(t, provider, { OIDC_KEY_COOLDOWN_SECONDS: 0 })
  t.match((await operatorHealth(app)).json(), {
    status: 'ok',
    identityProvider: { keys: 0, failing: { message: /openid-configuration/ } },
  })
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(admin) })).statusCode, 200, 'service token')
  const res = await app.inject({ url: '/ward-occupants', headers: bearer(await nurse(provider)) })
  t.equal(res.statusCode, 503)
  t.match(res.json(), { code: 'PROVIDER_KEYS_UNAVAILABLE', message: /service tokens still work/ })
  t.equal(res.headers['retry-after'], '30')

  // The provider back on its address: the next provider token fetches the keys.
  const back = await startProvider({ port: provider.port, keys: provider.keys })
  t.teardown(() => back.close())
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(await nurse(back)) })).statusCode, 200)
  t.match((await operatorHealth(app)).json(), { identityProvider: { keys: 1 } })
})

t.test('keys rotated: the new key is fetched, tokens of the old one stay valid until they expire', async (t) => {
  const old = await newKey('old')
  const first = await startProvider({ keys: [old] })
  const { app } = await buildOidcApp(t, first, { OIDC_KEY_COOLDOWN_SECONDS: 0 })
  const oldToken = await nurse(first)
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(oldToken) })).statusCode, 200)
  await first.close()
  // The provider publishes the new key first (it signs with it) and the old one beside it.
  const fresh = await newKey('fresh')
  const second = await startProvider({ port: first.port, keys: [fresh, old] })
  t.teardown(() => second.close())
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(await nurse(second, 'new')) })).statusCode, 200)
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(oldToken) })).statusCode, 200)
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(await nurse(first, 'old-2')) })).statusCode, 200)
  t.match((await operatorHealth(app)).json(), { identityProvider: { keys: 2 } })
})

t.test('an unknown kid fetches the keys at most once per cool-down', async (t) => {
  const provider = await startTestProvider(t)
  let fetches = 0
  const realFetch = globalThis.fetch
  globalThis.fetch = (async (...args: Parameters<typeof fetch>) => {
    if (String(args[0]).endsWith('/jwks')) fetches++
    return realFetch(...args)
  }) as typeof fetch
  t.teardown(() => {
    globalThis.fetch = realFetch
  })
  const { app } = await buildOidcApp(t, provider, { OIDC_KEY_COOLDOWN_SECONDS: 3600 })
  t.equal(fetches, 1, 'fetched at the start')
  for (let i = 0; i < 5; i++) {
    const forged = await provider.sign({ sub: 'x' }, { key: await newKey(`kid-${i}`) })
    t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(forged) })).statusCode, 401)
  }
  t.equal(fetches, 1, 'forged kids within the cool-down fetch nothing')
})

t.test('OIDC_JWKS_FILE: the keys from a file, the provider never asked', async (t) => {
  const provider = await startTestProvider(t)
  const dir = mkdtempSync(join(tmpdir(), 'jwks-'))
  const file = join(dir, 'jwks.json')
  writeFileSync(file, JSON.stringify({ keys: provider.keys.map(publicJwk) }))
  await provider.close()
  const { app } = await buildOidcApp(t, provider, { OIDC_JWKS_FILE: file })
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(await nurse(provider)) })).statusCode, 200)
  t.match((await operatorHealth(app)).json(), { identityProvider: { keys: 1 } })
  t.notMatch((await operatorHealth(app)).json(), { identityProvider: { failing: {} } })

  const privateFile = join(dir, 'private.json')
  writeFileSync(privateFile, JSON.stringify({ keys: provider.keys }))
  const { app: refusing } = await buildOidcApp(t, provider, { OIDC_JWKS_FILE: privateFile })
  t.match((await operatorHealth(refusing)).json(), {
    identityProvider: { keys: 0, failing: { message: /private or symmetric key/ } },
  })
})

t.test('a key the provider withdraws: tokens it verified are refused from the refresh on', async (t) => {
  const [withdrawn, kept] = [await newKey('withdrawn'), await newKey('kept')]
  const first = await startProvider({ keys: [withdrawn, kept] })
  const { app } = await buildOidcApp(t, first, { OIDC_KEY_COOLDOWN_SECONDS: 0 })
  const signedWithdrawn = await nurse(first)
  const signedKept = await first.sign(
    { sub: 'bob', realm_access: { roles: ['ward-nurse'] }, facility: 'A' },
    { key: kept },
  )
  for (const token of [signedWithdrawn, signedKept])
    t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(token) })).statusCode, 200, 'remembered')
  t.ok(app.providerTokens?.session('oidc:ann'), "ann's session")
  await first.close()
  // The provider drops the key (compromised) and signs with a new one: the first token of the new
  // key names a kid not held, which fetches the set again.
  const rotated = await newKey('rotated')
  const second = await startProvider({ port: first.port, keys: [rotated, kept] })
  t.teardown(() => second.close())
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(await nurse(second, 'cy')) })).statusCode, 200)
  const refused = await app.inject({ url: '/ward-occupants', headers: bearer(signedWithdrawn) })
  t.equal(refused.statusCode, 401, 'the remembered token of the withdrawn key is verified again, and refused')
  t.match(refused.json(), { code: 'TOKEN_REJECTED', message: /no provider key matches its 'kid'/ })
  t.equal(app.providerTokens?.session('oidc:ann'), undefined, 'its session (tickets, open streams) ends too')
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(signedKept) })).statusCode, 200, 'kept key')
})

t.test('a kid published again with other key material: what the old key verified is refused', async (t) => {
  const original = await newKey('key-1')
  const first = await startProvider({ keys: [original] })
  const { app } = await buildOidcApp(t, first, { OIDC_KEY_COOLDOWN_SECONDS: 0 })
  const token = await nurse(first)
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(token) })).statusCode, 200)
  await first.close()
  const second = await startProvider({ port: first.port, keys: [await newKey('key-1')] })
  t.teardown(() => second.close())
  await app.providerTokens?.refreshKeys()
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(token) })).statusCode, 401, 'same kid, new key')
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(await nurse(second, 'bob')) })).statusCode, 200)
})
