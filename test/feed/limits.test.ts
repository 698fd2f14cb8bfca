import type { IncomingMessage, ServerResponse } from 'node:http'
import { connect } from 'node:net'
import t from 'tap'
import { bearer, type TestApp } from '../helper.js'
import { listeningApp, openStream, waitUntil } from './helpers.js'

t.test('streams per token and in all are limited: 429 with Retry-After', async (t) => {
  const { app, tokens, base } = await listeningApp(t, { FEED_MAX_STREAMS_PER_TOKEN: 2, FEED_MAX_STREAMS: 3 })
  const first = await openStream(`${base}/events`, bearer(tokens.read))
  const second = await openStream(`${base}/events`, bearer(tokens.read))
  t.teardown(() => {
    for (const s of [first, second]) s.close()
  })
  const third = await openStream(`${base}/events`, bearer(tokens.read))
  t.equal(third.status, 429)
  t.equal(third.headers['retry-after'], '5')
  t.equal(JSON.parse(third.body).code, 'TOO_MANY_STREAMS')

  const other = await openStream(`${base}/events`, bearer(tokens.readA))
  t.teardown(() => other.close())
  t.equal(other.status, 200, 'another token still may')
  const full = await openStream(`${base}/events`, bearer(tokens.admin))
  t.equal(full.status, 429, 'the service-wide limit')

  first.close()
  await waitUntil(() => app.feed.hub.size === 2, 'the closed stream to be forgotten')
  const again = await openStream(`${base}/events`, bearer(tokens.read))
  t.teardown(() => again.close())
  t.equal(again.status, 200, 'a closed stream frees its place')
})

interface Watched {
  /** The most the response ever held unsent (Node's buffer and the socket's), after a write. */
  peak: number
  /** The largest single write (one event's frame). */
  largest: number
  /** What it held unsent when the server cut it; null while it is not cut. */
  atCut: number | null
}

/**
 * The server's side of every /events response, watched from outside the feed: Node's own count
 * of the bytes written but not yet taken by the kernel, after each write and at the cut.
 */
function watchStreams(app: TestApp): Watched[] {
  const watched: Watched[] = []
  app.server.on('request', function watch(req: IncomingMessage, res: ServerResponse) {
    if (!req.url?.startsWith('/events')) return
    const w: Watched = { peak: 0, largest: 0, atCut: null }
    watched.push(w)
    const write = res.write.bind(res) as (chunk: string) => boolean
    res.write = ((chunk: string) => {
      const ok = write(chunk)
      w.largest = Math.max(w.largest, Buffer.byteLength(chunk))
      w.peak = Math.max(w.peak, res.writableLength)
      return ok
    }) as typeof res.write
    const destroy = res.destroy.bind(res)
    res.destroy = ((error?: Error) => {
      w.atCut ??= res.writableLength
      return destroy(error)
    }) as typeof res.destroy
  })
  return watched
}

// Above the response's own high-water mark (64 KB on Node 22 and later), which the limit never
// goes below: this limit is the one that binds.
const LIMIT = 262_144

t.test('a client that stops reading is cut past the buffer limit, after the limit plus one event', async (t) => {
  const { app, tokens, base } = await listeningApp(t, { FEED_BUFFER_BYTES: LIMIT })
  const watched = watchStreams(app)
  const fast = await openStream(`${base}/events?resources=form-templates`, bearer(tokens.read))
  t.teardown(() => fast.close())
  const { port } = new URL(base)
  const stalled = connect(Number(port), '127.0.0.1')
  t.teardown(() => stalled.destroy())
  stalled.write(
    `GET /events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\nAuthorization: Bearer ${tokens.read}\r\n\r\n`,
  )
  await waitUntil(() => app.feed.hub.size === 2, 'the stalled stream to open')
  stalled.pause() // reads nothing more: the kernel buffers fill, then the server's

  // Events much smaller than the limit, so where the cut falls pins the limit from both sides;
  // 6 MB at least, past what the kernel's socket buffers take in (about 4 MB on loopback on one
  // machine). A kernel whose buffers take in more gets more writes, until the stream is cut.
  const template = 'x'.repeat(20_000)
  const fewest = 300
  const most = 3_000
  let writes = 0
  for (; writes < most && (writes < fewest || app.feed.hub.size === 2); writes++) {
    const res = await app.inject({
      method: 'POST',
      url: '/form-templates',
      headers: bearer(tokens.write),
      payload: { type: `big-${writes}`, template },
    })
    if (res.statusCode !== 200) throw new Error(`write ${writes}: ${res.body}`)
  }
  await fast.until((s) => s.changes().length === writes, 30_000, 'every change on the reading stream')
  t.same(
    fast.changes().map((e) => JSON.parse(e.data).type),
    Array.from({ length: writes }, (_, i) => `big-${i}`),
  )
  // The hub writes an event to every stream in one pass: the cut, if any, has happened by now.
  t.equal(app.feed.hub.size, 1, 'the stalled stream was cut')
  const cuts = watched.filter((w) => w.atCut !== null)
  t.equal(cuts.length, 1, 'the server cut one stream')
  t.equal(app.feed.hub.counts.cut, 1, 'counted once, for the metrics (facility_service_feed_slow_readers_cut_total)')
  const cut = cuts[0] ?? { peak: Number.NaN, largest: 0, atCut: null }
  t.ok(cut.atCut !== null && cut.atCut > LIMIT, `cut once more than the limit waited unsent (${cut.atCut} bytes)`)
  // A few bytes of chunked framing ride along with each write.
  t.ok(
    cut.peak <= LIMIT + cut.largest + 64,
    `never held more than the limit plus one event (${cut.peak} <= ${LIMIT} + ${cut.largest})`,
  )
  t.pass(`${(writes * template.length) / 1e6} MB of changes did not pile up for a client that does not read`)
})

t.test('the streams of a revoked or expired token close within seconds', async (t) => {
  const { app, base } = await listeningApp(t)
  // The clock moves past the expiry once the streams are open: however long opening them takes,
  // the expiring token is still valid then.
  const realNow = Date.now
  let later = 0
  Date.now = () => realNow() + later
  t.teardown(() => {
    Date.now = realNow
  })
  const revoked = app.tokens.create({ account: 'tablet-1', role: 'read' })
  const expiring = app.tokens.create({ account: 'tablet-2', role: 'read', expiresAt: Date.now() + 60_000 })
  const kept = app.tokens.create({ account: 'tablet-3', role: 'read' })
  const streams = await Promise.all(
    [revoked, expiring, kept].map(({ token }) => openStream(`${base}/events`, bearer(token))),
  )
  t.teardown(() => {
    for (const s of streams) s.close()
  })
  t.same(
    streams.map((s) => s.status),
    [200, 200, 200],
    'every stream opened',
  )
  app.tokens.revoke(revoked.info.tokenId)
  await streams[0]?.until((s) => s.ended, 10_000, 'the revoked token stream to end')
  later = 60_000
  await streams[1]?.until((s) => s.ended, 10_000, 'the expired token stream to end')
  t.notOk(streams[2]?.ended, 'a valid token keeps its stream')
})

t.test('closing the app ends every stream cleanly', async (t) => {
  const { app, tokens, base } = await listeningApp(t)
  const streams = await Promise.all(
    [tokens.read, tokens.readA, tokens.admin].map((tk) => openStream(`${base}/events`, bearer(tk))),
  )
  await app.close()
  for (const stream of streams) {
    await stream.until((s) => s.ended)
    t.notOk(stream.errored, 'a clean end of the response, not a reset')
  }
  t.equal(app.feed.hub.size, 0)
})
