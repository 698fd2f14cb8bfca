import assert from 'node:assert/strict'
import fc from 'fast-check'
import t from 'tap'
import { bearer } from '../helper.js'
import {
  anyBodyArb,
  authorizationArb,
  bodyOptions,
  buildFuzzApp,
  check,
  idArb,
  ifMatchArb,
  mutatedBodyArb,
  oddStringArb,
  poolId,
  send,
} from './fuzz-helper.js'
import {
  assertDeleted,
  assertOccupantCreated,
  assertOccupantPatched,
  principalOf,
  rowOf,
  sentObject,
} from './write-oracle.js'

// Bodies and ids of /ward-occupants: never a 5xx, errors in the contract's shape, nothing
// changes in the database when the answer is a 4xx, and a 200 stored exactly what was sent
// (write-oracle.ts reads the row back with plain SQL).

const FIELDS = ['encounter', 'bed', 'occupiedBy', 'createdAt', 'occupiedAt', 'provider', 'facility', 'room']
const SERVER_OWNED = ['id', 'createdBy', 'dischargedAt', 'dischargedBy']

const textArb = fc.oneof(
  { weight: 4, arbitrary: fc.stringMatching(/^[A-Za-z0-9-]{1,12}$/) },
  { weight: 1, arbitrary: oddStringArb().filter((s) => s.length > 0) },
)
const timestampArb = fc.oneof(
  fc.nat(),
  fc.constantFrom(1_700_000_000_000, 8_640_000_000_000_000, 8_640_000_000_000_001, Number.MAX_SAFE_INTEGER, -1, 1.5),
)
// Few beds and facilities, so admissions collide (409 BED_OCCUPIED) and bound tokens name others (403).
const createArb = fc.record(
  {
    encounter: textArb,
    bed: fc.oneof({ weight: 3, arbitrary: fc.constantFrom('B-1', 'B-2', 'B-3') }, { weight: 1, arbitrary: textArb }),
    occupiedBy: textArb,
    createdAt: timestampArb,
    occupiedAt: timestampArb,
    provider: textArb,
    facility: fc.constantFrom('A', 'B', 'C'),
    room: textArb,
  },
  { requiredKeys: ['encounter', 'bed', 'occupiedBy'] },
)
const patchArb = fc.record({ provider: textArb, discharge: fc.boolean() }, { requiredKeys: [] })

t.test('POST /ward-occupants with any body', async (t) => {
  const { app, tokens, config } = await buildFuzzApp(t)
  const statuses = new Map<number, number>()
  await check(
    fc.asyncProperty(
      authorizationArb(tokens),
      fc.oneof(
        anyBodyArb(mutatedBodyArb(createArb, FIELDS, SERVER_OWNED, config.BODY_LIMIT), config.BODY_LIMIT),
        // Well-formed bodies, so that many writes succeed and are read back.
        createArb.map((json) => ({ json }) as { json: unknown }),
      ),
      async (authorization, body) => {
        const options = bodyOptions(body)
        const t0 = Date.now()
        const res = await send(app, {
          method: 'POST',
          url: '/ward-occupants',
          ...options,
          headers: { ...options.headers, ...authorization },
        })
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
        if (res.statusCode === 200)
          assertOccupantCreated(app.db, res, sentObject(options.payload), principalOf(tokens, authorization), t0)
      },
    ),
    undefined,
    // Drawn creates succeed 15 to 20 times in 200 runs; these two do in every run, whatever is drawn.
    [
      [bearer(tokens.write), { json: { encounter: 'enc-x', bed: 'example-1', occupiedBy: 'patient-x' } }],
      [
        bearer(tokens.writeA),
        { json: { encounter: 'enc-y', bed: 'example-2', occupiedBy: 'patient-y', room: 'R-2', provider: 'dr-1' } },
      ],
    ],
  )
  t.ok(statuses.get(200), 'some creates succeeded')
  t.ok(statuses.get(400), 'some bodies were refused')
  t.comment(`statuses: ${JSON.stringify(Object.fromEntries(statuses))}`)
})

t.test('GET, PATCH and DELETE /ward-occupants/:id with any id, body and If-Match', async (t) => {
  const { app, tokens, config } = await buildFuzzApp(t)
  const ids = () => (app.db.prepare('SELECT id FROM ward_occupants').pluck().all() as string[]).sort()
  let beds = 0
  async function replenish() {
    while (ids().length < 6) {
      const token = [tokens.writeA, tokens.writeB, tokens.write][beds % 3] as string
      const payload = { encounter: 'e', bed: `seed-${beds++}`, occupiedBy: 'p', room: 'R-1' }
      await app.inject({ method: 'POST', url: '/ward-occupants', headers: bearer(token), payload })
    }
  }
  const statuses = new Map<string, number>()
  await check(
    fc.asyncProperty(
      fc.constantFrom('GET', 'PATCH', 'PATCH', 'DELETE'),
      authorizationArb(tokens),
      idArb(),
      fc.oneof(
        anyBodyArb(
          mutatedBodyArb(patchArb, ['provider', 'discharge'], [...SERVER_OWNED, ...FIELDS], config.BODY_LIMIT),
          config.BODY_LIMIT,
        ),
        patchArb.map((json) => ({ json }) as { json: unknown }),
      ),
      ifMatchArb,
      async (method, authorization, id, body, ifMatch) => {
        await replenish()
        const options = method === 'GET' ? { headers: {} } : bodyOptions(body)
        const target = id(ids())
        const before = rowOf(app.db, 'ward_occupants', target)
        const t0 = Date.now()
        const res = await send(app, {
          method: method as 'GET' | 'PATCH' | 'DELETE',
          url: `/ward-occupants/${target}`,
          ...options,
          headers: { ...options.headers, ...authorization, ...ifMatch },
        })
        const key = `${method} ${res.statusCode}`
        statuses.set(key, (statuses.get(key) ?? 0) + 1)
        if (res.statusCode !== 200 || method === 'GET') return
        assert.ok(before, 'a 200 for a record that did not exist')
        const who = principalOf(tokens, authorization)
        if (method === 'DELETE') assertDeleted(app.db, 'ward_occupants', before.id as string)
        else assertOccupantPatched(app.db, before, sentObject((options as { payload?: unknown }).payload), who, t0)
      },
    ),
    undefined,
    // Drawn patches and deletes succeed 5 to 10 times each in 200 runs, and a run with none checked
    // no success of that kind: these succeed in every run (tokens.write reaches every facility).
    [
      ['PATCH', bearer(tokens.write), poolId(0), { json: { provider: 'dr-2' } }, {}],
      ['PATCH', bearer(tokens.write), poolId(1), { json: { discharge: true } }, {}],
      ['DELETE', bearer(tokens.write), poolId(2), { json: {} }, {}],
    ],
  )
  t.ok(statuses.get('PATCH 200'), 'some patches succeeded')
  t.ok(statuses.get('DELETE 200'), 'some deletes succeeded')
  t.comment(`statuses: ${JSON.stringify(Object.fromEntries(statuses))} (body limit ${config.BODY_LIMIT})`)
})
