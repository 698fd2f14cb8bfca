import t from 'tap'
import { MAX_TICKETS_PER_TOKEN, StreamTickets, TICKET_TTL_MS } from '../../feed/tickets.js'
import { bearer } from '../helper.js'
import { listeningApp, openStream, waitUntil } from './helpers.js'

// Tickets tried from outside: a token that floods the service with ticket requests may only hold
// so many, and never voids another token's; a stream refused for its request (a bad position, an
// unknown resource, too many streams) leaves its ticket unspent.

const issue = (app: Awaited<ReturnType<typeof listeningApp>>['app'], token: string) =>
  app.inject({ method: 'POST', url: '/events/tickets', headers: bearer(token) })

t.test('a flood of ticket requests is refused past its own cap and voids no one else’s ticket', async (t) => {
  const { app, tokens, base } = await listeningApp(t)
  const victim = (await issue(app, tokens.readA)).json().ticket as string
  const flooders = [tokens.read, app.tokens.create({ account: 'flood-2', role: 'read' }).token]
  const statuses = new Map<number, number>()
  let refusal: Awaited<ReturnType<typeof issue>> | undefined
  // More than the service ever kept in all before (10 000), so no bound on the total can hold.
  for (let i = 0; i < 10_002; i++) {
    const res = await issue(app, flooders[i % 2] as string)
    statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
    if (res.statusCode === 429) refusal ??= res
  }
  t.same(
    Object.fromEntries(statuses),
    { 200: 2 * MAX_TICKETS_PER_TOKEN, 429: 10_002 - 2 * MAX_TICKETS_PER_TOKEN },
    'each flooding token got its own cap of tickets, then 429',
  )
  t.same(refusal?.json(), {
    statusCode: 429,
    error: 'Too Many Requests',
    message: `this token holds ${MAX_TICKETS_PER_TOKEN} unused stream tickets, as many as it may; use one or wait for one to expire`,
    code: 'TOO_MANY_TICKETS',
    name: 'TooManyRequests',
  })
  const wait = Number(refusal?.headers['retry-after'])
  t.ok(wait >= 1 && wait <= TICKET_TTL_MS / 1000, `Retry-After: when its oldest ticket expires (${wait} s)`)

  const stream = await openStream(`${base}/events?ticket=${victim}`)
  t.teardown(() => stream.close())
  t.equal(stream.status, 200, 'the ticket of another token still opens its stream')
  t.equal((await issue(app, tokens.readA)).statusCode, 200, 'and that token may still ask for more')
})

t.test('a token frees its places by using its tickets, or when they expire', async (t) => {
  const tickets = new StreamTickets()
  const now = 1_000_000
  const held = Array.from({ length: MAX_TICKETS_PER_TOKEN }, (_, i) => tickets.issue('token-1', now + i))
  t.same(tickets.issue('token-1', now + 500), { refused: true, retryAfterMs: TICKET_TTL_MS - 500 })
  t.notOk('refused' in tickets.issue('token-2', now + 500), 'another token is not concerned')
  const first = held[0] as { ticket: string }
  t.equal(tickets.redeem(first.ticket, now + 600), 'token-1')
  t.notOk('refused' in tickets.issue('token-1', now + 600), 'a used ticket frees its place')
  t.ok('refused' in tickets.issue('token-1', now + 601), 'full again')
  t.notOk('refused' in tickets.issue('token-1', now + TICKET_TTL_MS + 1), 'an expired ticket frees its place')
})

t.test('a stream refused for its request keeps its ticket unspent', async (t) => {
  const { app, tokens, base } = await listeningApp(t, { FEED_MAX_STREAMS_PER_TOKEN: 1 })
  const ticket = (await issue(app, tokens.readA)).json().ticket as string
  const refusals: { url: string; headers: Record<string, string>; code: string }[] = [
    { url: `/events?ticket=${ticket}`, headers: { 'last-event-id': 'yesterday' }, code: 'INVALID_LAST_EVENT_ID' },
    { url: `/events?ticket=${ticket}&lastEventId=-1`, headers: {}, code: 'FST_ERR_VALIDATION' },
    { url: `/events?ticket=${ticket}&resources=patients`, headers: {}, code: 'UNKNOWN_RESOURCE' },
  ]
  for (const r of refusals) {
    const refused = await openStream(`${base}${r.url}`, r.headers)
    t.equal(refused.status, 400, r.code)
    t.equal(JSON.parse(refused.body).code, r.code)
  }
  const busy = await openStream(`${base}/events`, bearer(tokens.readA))
  t.teardown(() => busy.close())
  const tooMany = await openStream(`${base}/events?ticket=${ticket}`)
  t.equal(tooMany.status, 429, 'the token has as many streams as it may')
  busy.close()
  await waitUntil(() => app.feed.hub.size === 0, 'the closed stream to be forgotten')
  const stream = await openStream(`${base}/events?ticket=${ticket}`)
  t.teardown(() => stream.close())
  t.equal(stream.status, 200, 'the ticket still opens its stream, once')
  t.equal((await openStream(`${base}/events?ticket=${ticket}`)).status, 401, 'and only once')
})
