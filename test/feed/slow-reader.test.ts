import t from 'tap'
import { bearer } from '../helper.js'
import { listeningApp, openStream, waitUntil } from './helpers.js'

// A bed board on a weak network resumes from its last id and reads slowly while the catch-up is
// sent. The changes committed meanwhile must still reach it, after the catch-up, once each and in
// order: with every resource and a token without a facility, that is every id without a gap.

// About 200 kB per event (a layout near its size limit), 9 MB in all: well past what the loopback
// socket's kernel buffers take in (about 4 MB here), so the catch-up must wait for the reader. The
// test checks that it did rather than trusting the number.
const BIG = { template: 'x'.repeat(190_000), description: 'y'.repeat(10_000) }
const BACKLOG = 45

t.test('changes committed while a slow reader catches up reach it after the catch-up', async (t) => {
  const { app, tokens, base } = await listeningApp(t, { FEED_BUFFER_BYTES: 65_536 })
  const auth = bearer(tokens.write)
  const start = app.feed.log.head()
  for (let i = 0; i < BACKLOG; i++) {
    const res = await app.inject({
      method: 'POST',
      url: '/form-templates',
      headers: auth,
      payload: { type: `big-${i}`, ...BIG },
    })
    t.equal(res.statusCode, 200)
  }
  const stream = await openStream(`${base}/events`, { ...auth, 'last-event-id': String(start) }, { paused: true })
  t.teardown(() => stream.close())
  t.equal(app.feed.hub.catchingUp, 1, 'the catch-up began')

  const admitted: string[] = []
  for (let i = 0; i < 10; i++) {
    const res = await app.inject({
      method: 'POST',
      url: '/ward-occupants',
      headers: auth,
      payload: { encounter: `e-${i}`, bed: `slow-${i}`, occupiedBy: 'p' },
    })
    admitted.push(res.json().id)
  }
  t.equal(app.feed.hub.catchingUp, 1, 'the admissions were committed while the catch-up waited for the reader')

  stream.resume()
  await waitUntil(() => app.feed.hub.catchingUp === 0, 'the catch-up to end', 30_000)
  // One more, live: once it is in, everything before it must be too.
  const sentinel = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: auth,
    payload: { encounter: 'end', bed: 'slow-end', occupiedBy: 'p' },
  })
  admitted.push(sentinel.json().id)
  const last = admitted.at(-1)
  await stream.until((s) => s.changes().some((e) => JSON.parse(e.data).id === last), 30_000, 'the last admission')
  const head = app.feed.log.head()
  t.same(
    stream.changes().map((e) => Number(e.id)),
    Array.from({ length: head - start }, (_, i) => start + 1 + i),
    'every id after the one resumed from, once, in order: no gap',
  )
  const received = stream
    .changes()
    .filter((e) => e.event === 'ward-occupants created')
    .map((e) => JSON.parse(e.data).id)
  t.same(received, admitted, 'each admission once, in order')
  t.notOk(stream.ended, 'still open, live')
})
