import type { Test } from 'tap'
import t from 'tap'
import { bearer } from '../helper.js'
import { listeningApp, openStream, type RawStream, waitUntil } from './helpers.js'

// A bed board on a weak network resumes from its last id and reads slowly while the catch-up is
// sent. The changes committed meanwhile must still reach it, after the catch-up, once each and in
// order: with every resource and a token without a facility, that is every id without a gap.

// About 200 kB per event (a layout near its size limit). How much a paused reader's loopback
// socket takes in before the server must wait depends on the kernel (about 4 MB on one machine,
// more where receive buffers grow further), so the backlog starts at 9 MB and doubles until the
// catch-up is seen waiting for the reader.
const BIG = { template: 'x'.repeat(190_000), description: 'y'.repeat(10_000) }
const FIRST_BACKLOG = 45
const MOST_BACKLOG = 45 * 16

type App = Awaited<ReturnType<typeof listeningApp>>

/**
 * Resolves true once the stream's catch-up waits on its reader (the buffers full for ten turns of
 * the event loop that also writes them: with room, 'drain' would have come), false once it ended
 * with everything in the buffers.
 */
async function catchUpWaits(app: App['app']): Promise<boolean> {
  let stuck = 0
  while (app.feed.hub.catchingUp === 1) {
    stuck = app.feed.hub.waitingForReaders === 1 ? stuck + 1 : 0
    if (stuck === 10) return true
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return false
}

async function pausedReaderWaitedFor(t: Test, { app, tokens, base }: App, start: number): Promise<RawStream> {
  const auth = bearer(tokens.write)
  let committed = 0
  for (let backlog = FIRST_BACKLOG; backlog <= MOST_BACKLOG; backlog *= 2) {
    for (; committed < backlog; committed++) {
      const res = await app.inject({
        method: 'POST',
        url: '/form-templates',
        headers: auth,
        payload: { type: `big-${committed}`, ...BIG },
      })
      if (res.statusCode !== 200) throw new Error(`backlog write answered ${res.statusCode}: ${res.body}`)
    }
    const stream = await openStream(`${base}/events`, { ...auth, 'last-event-id': String(start) }, { paused: true })
    if (await catchUpWaits(app)) {
      t.comment(`a paused reader made the catch-up wait at a backlog of ${committed} events`)
      t.teardown(() => stream.close())
      return stream
    }
    stream.close()
    await waitUntil(() => app.feed.hub.size === 0, 'the stream to close')
  }
  throw new Error(`a backlog of ${MOST_BACKLOG} events of 200 kB fit in the socket buffers`)
}

t.test('changes committed while a slow reader catches up reach it after the catch-up', async (t) => {
  const opened = await listeningApp(t, { FEED_BUFFER_BYTES: 65_536 })
  const { app, tokens } = opened
  const auth = bearer(tokens.write)
  const start = app.feed.log.head()
  const stream = await pausedReaderWaitedFor(t, opened, start)

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
