import type { AddressInfo } from 'node:net'
import fc from 'fast-check'
import t from 'tap'
import { openStream, type RawStream } from '../feed/helpers.js'
import { bearer } from '../helper.js'
import { propertyRuns } from '../property-runs.js'
import {
  buildMatrixApp,
  type Caller,
  canSee,
  makeRecord,
  type ResourceName,
  TARGETS,
  type Target,
} from './isolation-helper.js'

type Change =
  | { kind: 'record'; resource: ResourceName; target: number }
  | { kind: 'discharge'; pick: number }
  | { kind: 'remove'; pick: number }
  | { kind: 'seen'; pick: number; by: number }

const change: fc.Arbitrary<Change> = fc.oneof(
  fc.record({
    kind: fc.constant('record' as const),
    resource: fc.constantFrom<ResourceName>('ward-occupants', 'form-templates', 'notifications'),
    target: fc.nat(),
  }),
  fc.record({ kind: fc.constantFrom('discharge' as const, 'remove' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('seen' as const), pick: fc.nat(), by: fc.nat() }),
)

interface Made {
  resource: ResourceName
  id: string
  target: Target
}

/**
 * The isolation matrix on the live feed: nine tokens (role × facility) each hold a stream while a
 * random series of changes runs across facility A, facility B and no facility. Each stream must
 * carry exactly the events the matrix's rule (canSee, written in the test, not taken from the app)
 * allows that token: no event of another facility, of a record without a facility for a bound
 * token, of a notification addressed to someone else, and no mark seen by a reader it may not
 * learn of (made with a token of another facility).
 */
t.test('no stream carries an event its token could not read', async (t) => {
  const { app, callers, root } = await buildMatrixApp(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`

  await fc.assert(
    fc.asyncProperty(fc.array(change, { minLength: 10, maxLength: 30 }), async (changes) => {
      const streams = new Map<Caller, RawStream>()
      for (const caller of callers) streams.set(caller, await openStream(`${base}/events`, bearer(caller.token)))
      const expected = new Map<Caller, string[]>(callers.map((c) => [c, []]))
      const expect = (allowed: (c: Caller) => boolean, key: string) => {
        for (const caller of callers) if (allowed(caller)) expected.get(caller)?.push(key)
      }
      const made: Made[] = []
      const occupants = () => made.filter((m) => m.resource === 'ward-occupants')
      const notifications = () => made.filter((m) => m.resource === 'notifications')

      for (const c of changes) {
        if (c.kind === 'record') {
          const targets = TARGETS[c.resource]
          const target = targets[c.target % targets.length] as Target
          const id = await makeRecord(app, root, c.resource, target)
          made.push({ resource: c.resource, id, target })
          expect((caller) => canSee(caller, c.resource, target), `${c.resource} created ${id}`)
          // An occupant's notification: its facility's, or only for unbound tokens.
          if (c.resource === 'ward-occupants')
            expect((caller) => canSee(caller, 'ward-occupants', target), `ward notice ${id}`)
        } else if (c.kind === 'discharge' || c.kind === 'remove') {
          const list = occupants()
          const m = list[c.pick % Math.max(1, list.length)]
          if (!m) continue
          const res = await app.inject({
            method: c.kind === 'remove' ? 'DELETE' : 'PATCH',
            url: `/ward-occupants/${m.id}`,
            headers: bearer(root.token),
            ...(c.kind === 'discharge' ? { payload: { discharge: true } } : {}),
          })
          if (res.statusCode !== 200) continue // already discharged: no change, no event
          const name = c.kind === 'remove' ? 'removed' : 'patched'
          expect((caller) => canSee(caller, 'ward-occupants', m.target), `ward-occupants ${name} ${m.id}`)
          if (c.kind === 'discharge')
            expect((caller) => canSee(caller, 'ward-occupants', m.target), `ward notice ${m.id}`)
          if (c.kind === 'remove') made.splice(made.indexOf(m), 1)
        } else {
          const list = notifications()
          const n = list[c.pick % Math.max(1, list.length)]
          const readers = n ? callers.filter((caller) => canSee(caller, 'notifications', n.target)) : []
          const reader = readers[c.by % Math.max(1, readers.length)]
          if (!n || !reader) continue
          const res = await app.inject({
            method: 'POST',
            url: `/notifications/${n.id}/seen`,
            headers: bearer(reader.token),
          })
          if (res.statusCode !== 200) throw new Error(`mark seen: ${res.body}`)
          const already = (n as Made & { seenBy?: Set<string> }).seenBy ?? new Set<string>()
          if (already.has(reader.account)) continue // marking again is no change
          already.add(reader.account)
          Object.assign(n, { seenBy: already })
          const learns = (caller: Caller) =>
            caller.facility === null || caller.facility === reader.facility || caller.account === reader.account
          expect(
            (caller) => canSee(caller, 'notifications', n.target) && learns(caller),
            `notifications patched ${n.id}`,
          )
        }
      }
      // A last notification for everyone: once each stream has it, it has everything before it.
      const last = await makeRecord(app, root, 'notifications', { name: 'all', facility: null })
      expect(() => true, `notifications created ${last}`)
      for (const [caller, stream] of streams) {
        await stream.until((s) => s.changes().some((e) => e.data.includes(last)), 10_000, `${caller.name} to finish`)
        stream.close()
        const received = stream.changes().map((e) => keyOf(e.event, JSON.parse(e.data)))
        t.same(received, expected.get(caller), `${caller.name}: exactly its events`)
        for (const e of stream.changes()) {
          const data = JSON.parse(e.data) as { facility?: string; seenBy?: string[] }
          if (caller.facility !== null && data.facility !== undefined)
            t.equal(data.facility, caller.facility, `${caller.name}: no record of another facility`)
          for (const reader of data.seenBy ?? []) {
            const from = callers.find((c) => c.account === reader) as Caller
            const learns =
              caller.facility === null || from.facility === caller.facility || from.account === caller.account
            if (!learns) t.fail(`${caller.name} learned of reader ${reader} of facility ${from.facility}`)
          }
        }
      }
    }),
    { numRuns: propertyRuns(4) },
  )
})

/** The expectation's key for a received event: produced ward notices by the occupant they name. */
function keyOf(event: string, data: { id: string; type?: string; meta?: { wardOccupantId?: string } }): string {
  if (event === 'notifications created' && data.type === 'ward' && data.meta?.wardOccupantId)
    return `ward notice ${data.meta.wardOccupantId}`
  return `${event} ${data.id}`
}
