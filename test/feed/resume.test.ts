import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { EventSource } from 'eventsource'
import t from 'tap'
import { buildApp } from '../../app.js'
import { defaultConfig } from '../../config.js'
import { bearer } from '../helper.js'
import { firstMessage, listeningApp, openStream } from './helpers.js'

const admit = (bed: string) => ({ encounter: `enc-${bed}`, bed, occupiedBy: `patient-${bed}` })

t.test('the eventsource package reconnects with Last-Event-ID and misses nothing, twice nothing', async (t) => {
  const { app, tokens, base } = await listeningApp(t)
  const auth = bearer(tokens.write)
  const received: { id: string; bed: string }[] = []
  let opens = 0
  const source = new EventSource(`${base}/events?resources=ward-occupants`, {
    fetch: (url, init) => fetch(url, { ...init, headers: { ...init?.headers, ...bearer(tokens.read) } }),
  })
  t.teardown(() => source.close())
  source.addEventListener('open', () => opens++)
  source.addEventListener('ward-occupants created', (event) => {
    received.push({ id: event.lastEventId, bed: JSON.parse(event.data).bed })
  })
  const waitFor = async (count: number) => {
    for (let i = 0; i < 400 && received.length < count; i++) await new Promise((r) => setTimeout(r, 25))
  }
  await new Promise((resolve) => source.addEventListener('ready', resolve, { once: true }))

  for (const bed of ['R-1', 'R-2', 'R-3'])
    await app.inject({ method: 'POST', url: '/ward-occupants', headers: auth, payload: admit(bed) })
  await waitFor(3)
  // The network goes away: every connection of the server is cut.
  app.server.closeAllConnections()
  for (const bed of ['R-4', 'R-5', 'R-6'])
    await app.inject({ method: 'POST', url: '/ward-occupants', headers: auth, payload: admit(bed) })
  await waitFor(6)
  await app.inject({ method: 'POST', url: '/ward-occupants', headers: auth, payload: admit('R-7') })
  await waitFor(7)
  t.equal(opens, 2, 'the client reconnected once')
  t.same(
    received.map((r) => r.bed),
    ['R-1', 'R-2', 'R-3', 'R-4', 'R-5', 'R-6', 'R-7'],
    'every change, in order, once',
  )
  const ids = received.map((r) => Number(r.id))
  t.ok(
    ids.every((id, i) => i === 0 || id > (ids[i - 1] as number)),
    'ids increase',
  )
})

t.test('resume works across a restart of the server, from the database file', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'feed-restart-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const config = defaultConfig({ DATABASE_PATH: join(dir, 'f.db'), LOG_LEVEL: 'silent', RATE_LIMIT_MAX: 0 })
  const first = await buildApp(config)
  const { token } = first.tokens.create({ account: 'ward', role: 'write' })
  await first.listen({ port: 0, host: '127.0.0.1' })
  const base = () => `http://127.0.0.1:${(first.server.address() as { port: number }).port}`
  const stream = await openStream(`${base()}/events?resources=ward-occupants`, bearer(token))
  await first.inject({ method: 'POST', url: '/ward-occupants', headers: bearer(token), payload: admit('S-1') })
  await stream.until((s) => s.changes().length === 1)
  const lastSeen = stream.lastId() as string
  await first.close()
  await stream.until((s) => s.ended)

  const second = await buildApp(config)
  t.teardown(() => second.close())
  for (const bed of ['S-2', 'S-3']) {
    await second.inject({ method: 'POST', url: '/ward-occupants', headers: bearer(token), payload: admit(bed) })
  }
  await second.listen({ port: 0, host: '127.0.0.1' })
  const url = `http://127.0.0.1:${(second.server.address() as { port: number }).port}/events?resources=ward-occupants`
  const resumed = await openStream(url, { ...bearer(token), 'last-event-id': lastSeen })
  t.teardown(() => resumed.close())
  await resumed.until((s) => s.changes().length === 2)
  t.same(
    resumed.events.map((e) => [e.event, JSON.parse(e.data).bed]),
    [
      ['ward-occupants created', 'S-2'],
      ['ward-occupants created', 'S-3'],
    ],
    'exactly the changes after the last one received, and no ready: the client has its state',
  )
})

t.test('an id older than what is kept, or not of this database, opens with reset', async (t) => {
  const { app, tokens, base } = await listeningApp(t)
  const auth = bearer(tokens.write)
  for (const bed of ['P-1', 'P-2'])
    await app.inject({ method: 'POST', url: '/ward-occupants', headers: auth, payload: admit(bed) })
  const head = app.feed.log.head()
  t.equal(head, 4, 'two occupants and their two notifications')
  // As if the retention had passed for everything written so far.
  app.feed.log.prune(Date.now() + 1)
  const old = await openStream(`${base}/events`, { ...auth, 'last-event-id': '1' })
  t.teardown(() => old.close())
  t.same(await firstMessage(old), {
    id: String(head),
    event: 'reset',
    data: JSON.stringify({ lastEventId: String(head) }),
  })
  await app.inject({ method: 'POST', url: '/ward-occupants', headers: auth, payload: admit('P-3') })
  await old.until((s) => s.changes().length === 2)
  t.equal(old.changes()[0]?.id, String(head + 1), 'then live, without a gap')

  const current = await openStream(`${base}/events`, { ...auth, 'last-event-id': String(head) })
  t.teardown(() => current.close())
  await app.inject({ method: 'POST', url: '/ward-occupants', headers: auth, payload: admit('P-4') })
  await current.until((s) => s.events.length >= 3)
  t.equal(current.events[0]?.event, 'ward-occupants created', 'the pruned-through id itself is complete: no reset')
  t.equal(current.events[0]?.id, String(head + 1))

  const future = await openStream(`${base}/events`, { ...auth, 'last-event-id': String(head + 1000) })
  t.teardown(() => future.close())
  t.equal((await firstMessage(future)).event, 'reset', 'an id this database never gave (a restored backup)')
})

t.test('a long catch-up is paged and waits for a slow reader instead of cutting it', async (t) => {
  const { app, tokens, base } = await listeningApp(t, { FEED_BUFFER_BYTES: 16_384 })
  const auth = bearer(tokens.write)
  const payload = { type: 'bulk', description: 'x'.repeat(2000) }
  const writes = Array.from({ length: 600 }, () =>
    app.inject({ method: 'POST', url: '/form-templates', headers: auth, payload }),
  )
  await Promise.all(writes)
  const stream = await openStream(`${base}/events?resources=form-templates`, { ...auth, 'last-event-id': '0' })
  t.teardown(() => stream.close())
  await stream.until((s) => s.events.length === 600 || s.ended, 30_000, '600 events')
  t.equal(stream.events.length, 600, 'about 1.3 MB through a 16 KB buffer limit')
  t.notOk(stream.ended, 'still open, live')
})
