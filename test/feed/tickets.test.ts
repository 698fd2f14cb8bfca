import t from 'tap'
import { StreamTickets, TICKET_TTL_MS } from '../../feed/tickets.js'
import { bearer } from '../helper.js'
import { listeningApp, openStream } from './helpers.js'

t.test('a read token trades itself for a ticket that opens one stream with its rights', async (t) => {
  const { app, tokens, base } = await listeningApp(t)
  const before = Date.now()
  const res = await app.inject({ method: 'POST', url: '/events/tickets', headers: bearer(tokens.readA) })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['cache-control'], 'no-store')
  const { ticket, expiresAt } = res.json() as { ticket: string; expiresAt: number }
  t.match(ticket, /^fst_[A-Za-z0-9_-]{43}$/)
  t.ok(expiresAt >= before + TICKET_TTL_MS && expiresAt <= Date.now() + TICKET_TTL_MS, 'valid for 30 s')

  const stream = await openStream(`${base}/events?ticket=${ticket}&resources=ward-occupants`)
  t.teardown(() => stream.close())
  t.equal(stream.status, 200)
  const auth = bearer(tokens.write)
  await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: auth,
    payload: { encounter: 'e', bed: 'B', occupiedBy: 'p', facility: 'B' },
  })
  await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: auth,
    payload: { encounter: 'e', bed: 'N', occupiedBy: 'p' },
  })
  await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: auth,
    payload: { encounter: 'e', bed: 'A', occupiedBy: 'p', facility: 'A' },
  })
  await stream.until((s) => s.changes().length >= 1)
  t.same(
    stream.changes().map((e) => JSON.parse(e.data).bed),
    ['A'],
    "the ticket carries the token's facility: nothing of B or of no facility",
  )

  const again = await openStream(`${base}/events?ticket=${ticket}`)
  t.equal(again.status, 401, 'single use')
  t.equal(JSON.parse(again.body).code, 'TOKEN_REJECTED')
  t.match(again.headers['www-authenticate'], /^Bearer/)
})

t.test('tickets refused: unknown, with a header too, on other routes, of a revoked token, bad bodies', async (t) => {
  const { app, tokens, base } = await listeningApp(t)
  const issue = async (token: string) =>
    (await app.inject({ method: 'POST', url: '/events/tickets', headers: bearer(token) })).json().ticket as string

  t.equal((await openStream(`${base}/events?ticket=fst_nothing`)).status, 401, 'unknown')
  const both = await openStream(`${base}/events?ticket=${await issue(tokens.read)}`, bearer(tokens.read))
  t.equal(both.status, 400)
  t.equal(JSON.parse(both.body).code, 'TICKET_WITH_TOKEN')

  const elsewhere = await app.inject({ url: `/ward-occupants?ticket=${await issue(tokens.read)}` })
  t.equal(elsewhere.statusCode, 401, 'only the stream takes a ticket')

  const doomed = app.tokens.create({ account: 'tablet', role: 'read' })
  const ticket = await issue(doomed.token)
  app.tokens.revoke(doomed.info.tokenId)
  t.equal((await openStream(`${base}/events?ticket=${ticket}`)).status, 401, 'the token is checked again on use')

  const withBody = await app.inject({
    method: 'POST',
    url: '/events/tickets',
    headers: bearer(tokens.read),
    payload: { ttl: 1 },
  })
  t.equal(withBody.statusCode, 400)
  t.match(withBody.json().message, /ttl/)
  const empty = await app.inject({ method: 'POST', url: '/events/tickets', headers: bearer(tokens.read), payload: {} })
  t.equal(empty.statusCode, 200, '{} is no body')
  t.equal((await app.inject({ method: 'POST', url: '/events/tickets' })).statusCode, 401)
})

t.test('a ticket expires 30 s after it was issued, used or not', async (t) => {
  const tickets = new StreamTickets()
  const now = 1_000_000
  const late = tickets.issue('token-1', now) as { ticket: string }
  t.equal(tickets.redeem(late.ticket, now + TICKET_TTL_MS), null, 'at 30 s it is gone')
  const onTime = tickets.issue('token-1', now) as { ticket: string }
  t.equal(tickets.redeem(onTime.ticket, now + TICKET_TTL_MS - 1), 'token-1')
  t.equal(tickets.redeem(onTime.ticket, now + 1), null, 'and only once')
})
