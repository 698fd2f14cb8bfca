import { createHash } from 'node:crypto'
import fc from 'fast-check'
import t from 'tap'
import { bearer } from '../helper.js'
import { propertyRuns } from '../property-runs.js'
import { listeningApp, openStream, type RawStream } from './helpers.js'

type Write =
  | { kind: 'admit'; bed: number }
  | { kind: 'discharge' | 'reopen' | 'remove'; pick: number }
  | { kind: 'note' }

/**
 * One stretch of the ward's day as one client lives it: some writes while it reads, then it stays,
 * drops its connection (and resumes, reading at once or not for a while: `slow`) or stalls while
 * live, while `bulk` units of big changes and then the `during` writes are committed.
 */
interface Episode {
  writes: Write[]
  away: 'stay' | 'drop' | 'stall'
  slow: boolean
  bulk: number
  during: Write[]
  /** The round's resume that does not read: its `during` writes must be committed while its catch-up waits. */
  mustWait?: true
}

// A note (a small form template) always commits; the others may be refused (409) or do nothing.
const note = fc.constant({ kind: 'note' as const })
const write: fc.Arbitrary<Write> = fc.oneof(
  fc.record({ kind: fc.constant('admit' as const), bed: fc.integer({ min: 0, max: 3 }) }),
  fc.record({ kind: fc.constantFrom('discharge' as const, 'reopen' as const, 'remove' as const), pick: fc.nat() }),
  note,
)
const writes = fc.array(write, { maxLength: 6 })
// At least one change committed while the client is away or slow.
const during = fc.tuple(note, writes).map(([first, rest]) => [first, ...rest])

function episode(away: fc.Arbitrary<Episode['away']>, slow: fc.Arbitrary<boolean>, bulk: fc.Arbitrary<number>) {
  return fc.record({ writes, away, slow, bulk, during })
}
const anyEpisode = episode(fc.constantFrom('stay', 'drop', 'stall'), fc.boolean(), fc.integer({ min: 0, max: 2 }))
// Every round holds a resume that does not read during its catch-up, and a stall while live, each
// past the socket's buffers; the other episodes are drawn freely around them.
const day = fc
  .tuple(
    fc.array(anyEpisode, { maxLength: 2 }),
    episode(fc.constant('drop'), fc.constant(true), fc.constant(2)),
    fc.array(anyEpisode, { maxLength: 1 }),
    episode(fc.constant('stall'), fc.boolean(), fc.constant(2)),
  )
  .map(([a, slowResume, b, stall]): Episode[] => [...a, { ...slowResume, mustWait: true }, ...b, stall])

// A bulk unit writes about 3 MB (fifteen layouts near their size limit): two are more than the
// loopback socket's kernel buffers take in (about 4 MB), so a client that resumes without reading
// makes its catch-up wait, and one that stalls while live is cut past its buffer limit.
const LAYOUT = { template: 'x'.repeat(190_000), description: 'y'.repeat(10_000) }
const BULK = 15
const STREAM = '/events?resources=ward-occupants,form-templates'

/** An event as compared: big records by a hash, so a failure prints readable lines. */
const keyOf = (event: string, record: unknown) =>
  `${event} ${(record as { id: string }).id} ${createHash('sha256').update(JSON.stringify(record)).digest('hex').slice(0, 12)}`

/**
 * Writes that succeed and writes refused by a conflict (409s roll back), while the client drops
 * and resumes its connection, resumes without reading (its catch-up must wait for it), and stalls
 * and flows again while live (past the buffer limit the server cuts it, and it resumes by id): the
 * events the client assembles, across all its connections, are exactly the committed changes, in
 * commit order, each once. The expected list is the writes' own answers, as they are acknowledged.
 */
t.test('exactly once: slow, stalled and dropped readers assemble the committed changes', async (t) => {
  let round = 0
  let waited = 0
  await fc.assert(
    fc.asyncProperty(day, async (episodes) => {
      round++
      // A fresh app per round: rounds write megabytes, which the audit log keeps.
      const { app, tokens, base } = await listeningApp(t, { FEED_BUFFER_BYTES: 65_536 })
      const auth = bearer(tokens.write)
      const expected: string[] = []
      const assembled: string[] = []
      const ids: string[] = []
      const state = new Map<string, string>()
      let lastId = String(app.feed.log.head())
      let stream: RawStream | undefined = await openStream(`${base}${STREAM}`, auth)
      let paused = false
      let waitedThisRound = 0

      /** What a connection received counts; the rest must come after the resume. */
      const retire = () => {
        if (!stream) return
        for (const e of stream.changes()) assembled.push(keyOf(e.event, JSON.parse(e.data)))
        lastId = stream.lastId() ?? lastId
        stream.close()
        stream = undefined
      }
      const resume = async (asPaused: boolean) => {
        retire()
        paused = asPaused
        stream = await openStream(`${base}${STREAM}`, { ...auth, 'last-event-id': lastId }, { paused })
      }
      const flow = () => {
        paused = false
        stream?.resume()
      }
      const send = async (method: string, url: string, payload: object | undefined, event: string) => {
        const res = await app.inject({ method: method as 'POST', url, headers: auth, ...(payload ? { payload } : {}) })
        if (res.statusCode === 409) return res
        if (res.statusCode !== 200) throw new Error(`unexpected ${res.statusCode}: ${res.body}`)
        // A patch that changes nothing (discharge: false of an active record) commits no change.
        const record = res.json() as { id: string }
        if (!(event.endsWith('patched') && state.get(record.id) === res.body)) {
          expected.push(keyOf(event, record))
          // Committed while this client's catch-up waits for it to read: the case the round must hold.
          if (paused && app.feed.hub.catchingUp > 0) waitedThisRound++
        }
        state.set(record.id, res.body)
        return res
      }
      const apply = async (w: Write) => {
        const target = 'pick' in w && ids.length > 0 ? ids[w.pick % ids.length] : undefined
        if (w.kind === 'note') {
          await send('POST', '/form-templates', { type: `note-${round}` }, 'form-templates created')
        } else if (w.kind === 'admit') {
          const payload = { encounter: `e${round}`, bed: `${round}-${w.bed}`, occupiedBy: 'p' }
          const res = await send('POST', '/ward-occupants', payload, 'ward-occupants created')
          if (res.statusCode === 200) ids.push(res.json().id)
        } else if (w.kind === 'remove' && target) {
          await send('DELETE', `/ward-occupants/${target}`, undefined, 'ward-occupants removed')
          ids.splice(ids.indexOf(target), 1)
        } else if (target) {
          await send(
            'PATCH',
            `/ward-occupants/${target}`,
            { discharge: w.kind === 'discharge' },
            'ward-occupants patched',
          )
        }
      }

      for (const e of episodes) {
        // Cut while it stalled (past the buffer limit): it noticed on reading again, and resumes.
        if (!stream || stream.ended) await resume(false)
        for (const w of e.writes) await apply(w)
        if (e.away === 'drop') retire()
        if (e.away === 'stall') {
          paused = true
          stream?.pause()
        }
        for (let i = 0; i < e.bulk * BULK; i++)
          await send('POST', '/form-templates', { type: `bulk-${round}`, ...LAYOUT }, 'form-templates created')
        if (e.away === 'drop') await resume(e.slow)
        for (const w of e.during) await apply(w)
        // Two bulk units are past the loopback buffers here (18 to 85 waited writes in 4 rounds), but
        // buffers are the kernel's to size: where they took the whole catch-up in, no write waited and
        // the round proved nothing. Then more backlog and another resume without reading, until one did:
        // doubled each time, 45 MB in four: past the 36 MB of tcp_rmem's and tcp_wmem's maxima here.
        for (let more = 0; e.mustWait && waitedThisRound === 0 && more < 4; more++) {
          retire()
          for (let i = 0; i < BULK * 2 ** more; i++)
            await send('POST', '/form-templates', { type: `bulk-${round}`, ...LAYOUT }, 'form-templates created')
          await resume(true)
          await apply({ kind: 'note' })
        }
        flow()
      }
      await assembleUntilSentinel()
      await app.close()
      waited += waitedThisRound
      t.ok(waitedThisRound > 0, `round ${round}: writes were committed while its catch-up waited for the reader`)
      t.same(assembled, expected, `round ${round}: ${episodes.length} episodes`)

      /** A last, known change: once it is in, everything before it is too. A cut stream resumes. */
      async function assembleUntilSentinel() {
        const payload = { encounter: 'end', bed: `end-${round}`, occupiedBy: 'p' }
        const sentinel = (await send('POST', '/ward-occupants', payload, 'ward-occupants created')).json().id
        const has = (s: RawStream) => s.changes().some((e) => JSON.parse(e.data).id === sentinel)
        for (;;) {
          if (!stream || stream.ended) await resume(false)
          const current = stream as RawStream
          await current.until((s) => has(s) || s.ended, 30_000, 'the sentinel')
          if (has(current)) return retire()
        }
      }
    }),
    { numRuns: propertyRuns(4) },
  )
  t.comment(`${waited} writes were committed while a catch-up waited for its reader`)
})
