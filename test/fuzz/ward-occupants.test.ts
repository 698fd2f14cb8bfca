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
  send,
} from './fuzz-helper.js'

// Bodies and ids of /ward-occupants: never a 5xx, errors in the contract's shape, and nothing
// changes in the database when the answer is a 4xx.

const FIELDS = ['encounter', 'bed', 'occupiedBy', 'createdAt', 'occupiedAt', 'provider', 'facility', 'room']
const SERVER_OWNED = ['id', 'createdBy', 'dischargedAt', 'dischargedBy']

const textArb = fc.oneof(
  { weight: 4, arbitrary: fc.stringMatching(/^[A-Za-z0-9-]{1,12}$/) },
  { weight: 1, arbitrary: oddStringArb.filter((s) => s.length > 0) },
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
      anyBodyArb(mutatedBodyArb(createArb, FIELDS, SERVER_OWNED, config.BODY_LIMIT), config.BODY_LIMIT),
      async (authorization, body) => {
        const options = bodyOptions(body)
        const res = await send(app, {
          method: 'POST',
          url: '/ward-occupants',
          ...options,
          headers: { ...options.headers, ...authorization },
        })
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
      },
    ),
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
      anyBodyArb(mutatedBodyArb(patchArb, ['provider', 'discharge'], [...SERVER_OWNED, ...FIELDS], 20_000), 20_000),
      ifMatchArb,
      async (method, authorization, id, body, ifMatch) => {
        await replenish()
        const options = method === 'GET' ? { headers: {} } : bodyOptions(body)
        const res = await send(app, {
          method: method as 'GET' | 'PATCH' | 'DELETE',
          url: `/ward-occupants/${id(ids())}`,
          ...options,
          headers: { ...options.headers, ...authorization, ...ifMatch },
        })
        const key = `${method} ${res.statusCode}`
        statuses.set(key, (statuses.get(key) ?? 0) + 1)
      },
    ),
  )
  t.ok(statuses.get('PATCH 200'), 'some patches succeeded')
  t.ok(statuses.get('DELETE 200'), 'some deletes succeeded')
  t.comment(`statuses: ${JSON.stringify(Object.fromEntries(statuses))} (body limit ${config.BODY_LIMIT})`)
})
