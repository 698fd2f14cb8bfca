import t from 'tap'
import { AuthThrottle } from '../../../plugins/auth/throttle.js'
import { bearer, buildTestApp } from '../../helper.js'

// The failed-authentication throttle slows down failures only: a valid token is never refused
// because others failed from its address, or because someone tried its (public) id with a wrong
// secret. Default settings (20 failures per 15 minutes) unless a test says otherwise.

const WARD = '10.1.1.1'
const wrongSecret = (token: string) => `${token.slice(0, 28)}${'A'.repeat(43)}`
const unknownToken = `fs_${'0'.repeat(24)}_${'B'.repeat(43)}`

t.test('fifty bad tokens from one address, then a valid token from it: 200', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const statuses: number[] = []
  for (let i = 0; i < 50; i++) {
    const token = i % 2 === 0 ? unknownToken : 'fs_junk'
    const res = await app.inject({ url: '/ward-occupants', headers: bearer(token), remoteAddress: WARD })
    statuses.push(res.statusCode)
  }
  t.same(statuses.slice(0, 20), Array(20).fill(401), 'the first 20 failures are answered 401')
  t.same(statuses.slice(20), Array(30).fill(429), 'then failing requests get 429 early')
  const good = await app.inject({ url: '/ward-occupants', headers: bearer(tokens.read), remoteAddress: WARD })
  t.equal(good.statusCode, 200, 'the valid token of the same address passes')
  const write = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(tokens.write),
    remoteAddress: WARD,
    payload: { encounter: 'e-1', bed: 'B-1', occupiedBy: 'p-1' },
  })
  t.equal(write.statusCode, 200, 'and so does a write')
  const stillBad = await app.inject({ url: '/ward-occupants', headers: bearer(unknownToken), remoteAddress: WARD })
  t.equal(stillBad.statusCode, 429, 'a valid request does not reset the count of the failing ones')
  t.match(stillBad.json(), { statusCode: 429, error: 'Too Many Requests', code: 'TOO_MANY_AUTH_FAILURES' })
  t.ok(Number(stillBad.headers['retry-after']) > 0, 'Retry-After says when')
})

t.test('a tablet with a revoked token knocks all day; the rest of the ward keeps working', async (t) => {
  const { app, tokens } = await buildTestApp(t, { AUTH_FAILURE_LIMIT: 3 })
  const stale = app.tokens.create({ account: 'tablet-7', role: 'read', facility: 'A' })
  app.tokens.revoke(stale.info.tokenId)
  const knocks: number[] = []
  for (let i = 0; i < 10; i++) {
    knocks.push(
      (await app.inject({ url: '/ward-occupants', headers: bearer(stale.token), remoteAddress: WARD })).statusCode,
    )
    const neighbour = await app.inject({ url: '/ward-occupants', headers: bearer(tokens.readA), remoteAddress: WARD })
    t.equal(neighbour.statusCode, 200, `neighbour after knock ${i + 1}`)
  }
  t.same(knocks, [401, 401, 401, 429, 429, 429, 429, 429, 429, 429])
})

t.test('a known token id with a wrong secret is throttled by id; its correct secret still passes', async (t) => {
  const { app, tokens } = await buildTestApp(t, { AUTH_FAILURE_LIMIT: 3 })
  // Each attempt from a new address, so only the per-id count can stop them.
  const guess = (i: number) =>
    app.inject({ url: '/ward-occupants', headers: bearer(wrongSecret(tokens.readA)), remoteAddress: `10.2.0.${i}` })
  for (let i = 1; i <= 3; i++) t.equal((await guess(i)).statusCode, 401, `guess ${i}: 401`)
  const throttled = await guess(4)
  t.equal(throttled.statusCode, 429, 'the fourth guess at that id, from a fresh address: 429')
  t.match(throttled.json(), { code: 'TOO_MANY_AUTH_FAILURES' })
  const owner = await app.inject({ url: '/ward-occupants', headers: bearer(tokens.readA), remoteAddress: '10.2.0.4' })
  t.equal(owner.statusCode, 200, 'the same id with its correct secret: 200')
  const ownerElsewhere = await app.inject({
    url: '/ward-occupants',
    headers: bearer(tokens.readA),
    remoteAddress: WARD,
  })
  t.equal(ownerElsewhere.statusCode, 200, 'from any address')
  const otherId = await app.inject({
    url: '/ward-occupants',
    headers: bearer(wrongSecret(tokens.writeA)),
    remoteAddress: '10.2.0.9',
  })
  t.equal(otherId.statusCode, 401, 'another id from a fresh address is not affected')
})

t.test('an unknown token is throttled by address; other addresses are not affected', async (t) => {
  const { app, tokens } = await buildTestApp(t, { AUTH_FAILURE_LIMIT: 3 })
  const bad = (remoteAddress: string) =>
    app.inject({ url: '/ward-occupants', headers: bearer(unknownToken), remoteAddress })
  for (let i = 0; i < 3; i++) t.equal((await bad(WARD)).statusCode, 401)
  t.equal((await bad(WARD)).statusCode, 429, 'the address is over the limit')
  t.equal((await bad('10.9.9.9')).statusCode, 401, 'another address still gets 401')
  const missing = await app.inject({ url: '/ward-occupants', remoteAddress: WARD })
  t.equal(missing.statusCode, 429, 'a request without any token from that address too')
  t.equal(
    (await app.inject({ url: '/ward-occupants', headers: bearer(tokens.read), remoteAddress: WARD })).statusCode,
    200,
  )
})

t.test('behind TRUST_PROXY the forwarded address is the key', async (t) => {
  const { app, tokens } = await buildTestApp(t, { AUTH_FAILURE_LIMIT: 2, TRUST_PROXY: '127.0.0.1' })
  const PROXY = '127.0.0.1'
  const from = (client: string, token: string) =>
    app.inject({
      url: '/ward-occupants',
      headers: { ...bearer(token), 'x-forwarded-for': client },
      remoteAddress: PROXY,
    })
  for (let i = 0; i < 2; i++) t.equal((await from('203.0.113.5', unknownToken)).statusCode, 401)
  t.equal((await from('203.0.113.5', unknownToken)).statusCode, 429, 'the failing client is throttled')
  t.equal((await from('203.0.113.6', unknownToken)).statusCode, 401, 'another client behind the same proxy is not')
  t.equal(
    (await from('203.0.113.5', tokens.read)).statusCode,
    200,
    'and the throttled client with a valid token passes',
  )
})

t.test('a client cannot choose its address: what it writes into X-Forwarded-For is not believed', async (t) => {
  const { app } = await buildTestApp(t, { AUTH_FAILURE_LIMIT: 2, TRUST_PROXY: '127.0.0.1, 10.0.0.0/8' })
  // nginx with $proxy_add_x_forwarded_for appends the address it saw to what the client sent.
  const viaProxy = (sent: string) =>
    app.inject({
      url: '/ward-occupants',
      headers: { ...bearer(unknownToken), 'x-forwarded-for': `${sent}, 203.0.113.5` },
      remoteAddress: '127.0.0.1',
    })
  const statuses: number[] = []
  for (let i = 0; i < 5; i++) statuses.push((await viaProxy(`198.51.100.${i}`)).statusCode)
  t.same(statuses, [401, 401, 429, 429, 429], 'a new made-up address on every attempt: still one key')
  const direct = (remoteAddress: string) =>
    app.inject({
      url: '/ward-occupants',
      headers: { ...bearer(unknownToken), 'x-forwarded-for': '203.0.113.77' },
      remoteAddress,
    })
  const fromOutside = [(await direct('192.0.2.9')).statusCode, (await direct('192.0.2.9')).statusCode]
  t.same(fromOutside, [401, 401], 'a client that is no proxy: keyed by its own address, not the header')
  t.equal((await direct('192.0.2.9')).statusCode, 429)
  t.equal((await direct('10.1.2.3')).statusCode, 401, 'a proxy of the range: the address it forwards (new) counts')
})

t.test('a window lasts AUTH_FAILURE_WINDOW_MS: Retry-After never says longer', async (t) => {
  for (const windowMs of [1_000, 900_000]) {
    const { app } = await buildTestApp(t, { AUTH_FAILURE_LIMIT: 1, AUTH_FAILURE_WINDOW_MS: windowMs })
    await app.inject({ url: '/ward-occupants', headers: bearer(unknownToken), remoteAddress: WARD })
    const throttled = await app.inject({ url: '/ward-occupants', headers: bearer(unknownToken), remoteAddress: WARD })
    t.equal(throttled.statusCode, 429)
    const wait = Number(throttled.headers['retry-after'])
    t.ok(wait >= 1 && wait <= windowMs / 1000, `window ${windowMs} ms: Retry-After ${wait} s`)
    t.match(throttled.json().message, `retry in ${wait} seconds`)
  }
})

t.test('a key is forgiven exactly when its window ends (the clock is passed in, no waiting)', async (t) => {
  const throttle = new AuthThrottle(2, 60_000)
  const start = 1_000_000
  t.same(throttle.fail(['address a'], start), [])
  t.same(throttle.fail(['address a'], start + 10), ['address a'], 'the second failure reaches the limit of 2')
  t.equal(throttle.retryAfter(['address a'], start + 10), 60, 'the window began with the first failure')
  t.equal(throttle.retryAfter(['address a'], start + 59_999), 1, 'a millisecond before its end: still throttled')
  t.equal(throttle.retryAfter(['address a'], start + 60_000), 0, 'at its end: forgiven')
  t.same(throttle.fail(['address a'], start + 60_000), [], 'a failure then opens a new window, counted from 1')
  t.equal(throttle.retryAfter(['address a'], start + 60_001), 0)
})

t.test('failed stream tickets count as failures; a valid token still passes', async (t) => {
  const { app, tokens } = await buildTestApp(t, { AUTH_FAILURE_LIMIT: 2 })
  const ticket = () => app.inject({ url: '/events?ticket=nonsense', remoteAddress: WARD })
  t.equal((await ticket()).statusCode, 401)
  t.equal((await ticket()).statusCode, 401)
  t.equal((await ticket()).statusCode, 429)
  const issued = await app.inject({
    method: 'POST',
    url: '/events/tickets',
    headers: bearer(tokens.read),
    remoteAddress: WARD,
  })
  t.equal(issued.statusCode, 200, 'a valid token asks for a ticket from the throttled address')
})

t.test('the throttle remembers at most 10 000 keys: the oldest are forgotten first', async (t) => {
  const { app } = await buildTestApp(t, { AUTH_FAILURE_LIMIT: 1 })
  const bad = (remoteAddress: string) =>
    app.inject({ url: '/ward-occupants', headers: bearer(unknownToken), remoteAddress })
  t.equal((await bad('10.200.0.1')).statusCode, 401)
  t.equal((await bad('10.200.0.1')).statusCode, 429, 'over the limit of 1')
  // 10 000 other addresses fail once each: memory stays bounded by dropping the oldest window.
  for (let i = 0; i < 10_000; i++) await bad(`10.${100 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`)
  t.equal((await bad('10.200.0.1')).statusCode, 401, 'the first address was forgotten')
  t.equal((await bad('10.100.39.15')).statusCode, 429, 'the newest are still remembered')
})
