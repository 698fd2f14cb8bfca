import type { AddressInfo } from 'node:net'
import fc from 'fast-check'
import t from 'tap'
import { openStream, type RawStream } from '../feed/helpers.js'
import { bearer } from '../helper.js'
import { propertyRuns } from '../property-runs.js'
import { changes, createWorld, type Told } from './isolation-feed-world.js'
import { buildMatrixApp, type Caller } from './isolation-helper.js'

/**
 * The isolation matrix on the live feed. Nine tokens (role × facility A, B or none) each hold a
 * stream, opened in a drawn order, while a drawn series of changes runs: records made in A, B and
 * no facility, form templates renamed and moved between facilities, occupants discharged and
 * removed, notifications addressed to several accounts (some bound to another facility than the
 * notification's) and marked seen by any caller who may read them. The oracle is GET as each
 * caller just before and just after each change (isolation-feed-world.ts): every event a stream
 * carries must be exactly what that comparison says, its data field by field what GET showed
 * (`to` and `seenBy` included). A stream resumed from before the run (a catch-up from the log)
 * must carry the same, and each admin's audit trail only what it could GET on either side.
 */
t.test('every event, catch-up and audit entry is what GET showed that caller at that moment', async (t) => {
  let round = 0
  await fc.assert(
    fc.asyncProperty(
      fc.shuffledSubarray([...Array(9).keys()], { minLength: 9, maxLength: 9 }),
      changes,
      async (order, drawn) => {
        round++
        // A fresh app per round: the oracle's expectations start from an empty ward.
        const { app, callers, root } = await buildMatrixApp(t)
        await app.listen({ port: 0, host: '127.0.0.1' })
        const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/events`
        const start = String(app.feed.log.head())
        const opening = order.map((i) => callers[i] as Caller)
        const streams = new Map<Caller, RawStream>()
        for (const caller of opening) streams.set(caller, await openStream(url, bearer(caller.token)))

        const world = createWorld(app, callers, root)
        for (const c of drawn) await world.apply(c)
        // A last notification for everyone: once a stream has it, it has everything before it.
        await world.apply({ kind: 'notify', facility: null, to: null, unboundOnly: false })
        const last = [...world.recordIds].at(-1) as string
        const has = (s: RawStream) => s.changes().some((e) => e.data.includes(last))

        for (const caller of opening) {
          const expected = world.events.get(caller) as Told[]
          const live = streams.get(caller) as RawStream
          await live.until(has, 10_000, `${caller.name} to finish`)
          live.close()
          t.same(received(live), expected, `round ${round}, ${caller.name}: live, exactly what GET showed`)
          const resumed = await openStream(url, { ...bearer(caller.token), 'last-event-id': start })
          await resumed.until(has, 10_000, `${caller.name} to catch up`)
          resumed.close()
          t.same(received(resumed), expected, `round ${round}, ${caller.name}: caught up, the same`)
          if (caller.role === 'admin') {
            const res = await app.inject({ url: '/audit?$limit=1000', headers: bearer(caller.token) })
            const entries = (
              res.json().entries as { operation: string; recordId: string; before: unknown; after: unknown }[]
            )
              .filter((e) => world.recordIds.has(e.recordId))
              .map(({ operation, recordId, before, after }) => ({ operation, recordId, before, after }))
            t.same(entries, world.audits.get(caller), `round ${round}, ${caller.name}: the audit, as GET showed it`)
          }
        }
        await app.close()
      },
    ),
    { numRuns: propertyRuns(4) },
  )
})

function received(stream: RawStream): Told[] {
  return stream.changes().map((e) => ({ event: e.event, data: JSON.parse(e.data) }))
}
