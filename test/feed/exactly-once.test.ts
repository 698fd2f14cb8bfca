import fc from 'fast-check'
import t from 'tap'
import { bearer } from '../helper.js'
import { propertyRuns } from '../property-runs.js'
import { listeningApp, openStream, type RawStream } from './helpers.js'

type Step =
  | { kind: 'admit'; bed: number }
  | { kind: 'discharge'; pick: number }
  | { kind: 'reopen'; pick: number }
  | { kind: 'remove'; pick: number }
  | { kind: 'disconnect' }
  | { kind: 'reconnect' }

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('admit' as const), bed: fc.integer({ min: 0, max: 3 }) }),
  fc.record({ kind: fc.constant('discharge' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('reopen' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('remove' as const), pick: fc.nat() }),
  fc.constant({ kind: 'disconnect' as const }),
  fc.constant({ kind: 'reconnect' as const }),
)

/**
 * Writes that succeed and writes refused by a conflict (409s roll back), with the client's
 * connection dropped and resumed at random points: the events the client assembles, across all
 * its connections, are exactly the committed changes, in commit order, each once. The expected
 * list is the writes' own answers, recorded as they are acknowledged.
 */
t.test('exactly once: the assembled stream equals the committed changes', async (t) => {
  const { app, tokens, base } = await listeningApp(t)
  const auth = bearer(tokens.write)
  let round = 0
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 5, maxLength: 40 }), async (steps) => {
      round++
      const expected: [string, unknown][] = []
      const assembled: [string, unknown][] = []
      const ids: string[] = []
      let lastId: string | undefined
      let stream: RawStream | undefined = await openStream(`${base}/events?resources=ward-occupants`, auth)
      const collect = (s: RawStream) => {
        for (const e of s.changes()) assembled.push([e.event, JSON.parse(e.data)])
        lastId = s.lastId() ?? lastId
      }
      const write = async (method: string, url: string, payload: object | undefined, event: string) => {
        const res = await app.inject({ method: method as 'POST', url, headers: auth, ...(payload ? { payload } : {}) })
        if (res.statusCode === 200) expected.push([event, res.json()])
        else if (res.statusCode !== 409) throw new Error(`unexpected ${res.statusCode}: ${res.body}`)
        return res
      }
      for (const s of steps) {
        const target = ids.length > 0 && 'pick' in s ? ids[s.pick % ids.length] : undefined
        if (s.kind === 'admit') {
          const res = await write(
            'POST',
            '/ward-occupants',
            { encounter: `e${round}`, bed: `${round}-${s.bed}`, occupiedBy: 'p' },
            'ward-occupants created',
          )
          if (res.statusCode === 200) ids.push(res.json().id)
        } else if (s.kind === 'discharge' && target) {
          await write('PATCH', `/ward-occupants/${target}`, { discharge: true }, 'ward-occupants patched')
        } else if (s.kind === 'reopen' && target) {
          await write('PATCH', `/ward-occupants/${target}`, { discharge: false }, 'ward-occupants patched')
        } else if (s.kind === 'remove' && target) {
          await write('DELETE', `/ward-occupants/${target}`, undefined, 'ward-occupants removed')
          ids.splice(ids.indexOf(target), 1)
        } else if (s.kind === 'disconnect' && stream) {
          // Whatever arrived before the cut counts; the rest must come after the resume.
          await new Promise((r) => setTimeout(r, 5))
          collect(stream)
          stream.close()
          stream = undefined
        } else if (s.kind === 'reconnect' && !stream) {
          stream = await openStream(`${base}/events?resources=ward-occupants`, {
            ...auth,
            'last-event-id': lastId ?? '0',
          })
        }
      }
      stream ??= await openStream(`${base}/events?resources=ward-occupants`, {
        ...auth,
        'last-event-id': lastId ?? '0',
      })
      // A last, known change: once it is in, everything before it is too.
      const sentinel = await write(
        'POST',
        '/ward-occupants',
        { encounter: 'end', bed: `end-${round}`, occupiedBy: 'p' },
        'ward-occupants created',
      )
      await stream.until((s) => s.changes().some((e) => JSON.parse(e.data).id === sentinel.json().id))
      collect(stream)
      stream.close()
      t.same(assembled, dropNoOps(expected), `round ${round}: ${steps.length} steps`)
    }),
    { numRuns: propertyRuns(12) },
  )
})

/**
 * A patch that changes nothing (discharge: false of an active record) answers 200 with the record
 * as it is, but commits no change, and so is no event.
 */
function dropNoOps(writes: [string, unknown][]): [string, unknown][] {
  const state = new Map<string, string>()
  return writes.filter(([event, record]) => {
    const { id } = record as { id: string }
    const text = JSON.stringify(record)
    const same = event === 'ward-occupants patched' && state.get(id) === text
    state.set(id, text)
    return !same
  })
}
