import fc from 'fast-check'
import t, { type Test } from 'tap'
import type { buildApp } from '../../app.js'
import { statementsRunDuring } from '../db/captured-statements.js'
import { bearer } from '../helper.js'
import { propertyRuns } from '../property-runs.js'
import { type Caller, twoApps, twoAppsFor } from './two-apps.js'

/**
 * Ward occupant list pages are remembered until the database changes (db/read-memo.ts). The
 * oracle is a second app on the same database file that remembers nothing: whatever happens,
 * through the first app or through another connection (an admin's shell), the remembering app
 * answers what it answers.
 */

// Pairs that differ in one part of the remembered page's key only.
const QUERIES = [
  '',
  'dischargedAt=null',
  '$limit=2',
  '$limit=2&$skip=1',
  'bed=B-1',
  'bed=B-2',
  '$sort[occupiedAt]=-1&$limit=3',
  '$sort[occupiedAt]=1&$limit=3',
  '$select[]=bed',
  '$select[]=room',
]

/** Tokens that differ in one thing only: the facility, or the role. */
const CALLERS: Caller[] = [
  { account: 'nurse', role: 'write', facility: 'A' },
  { account: 'nurse', role: 'write', facility: 'B' },
  { account: 'nurse', role: 'write', facility: null },
  { account: 'nurse', role: 'read', facility: 'A' },
]

type Step =
  | { kind: 'list'; caller: number; query: number }
  | { kind: 'admit'; caller: number; bed: number }
  | { kind: 'discharge'; pick: number }
  | { kind: 'elsewhere'; pick: number; room: string }

const STEP_ARB: fc.Arbitrary<Step> = fc.oneof(
  // Biased towards one caller and one query, so pages are often asked again.
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('list' as const),
      caller: fc.oneof(fc.constant(0), fc.nat()),
      query: fc.oneof(fc.constant(0), fc.nat()),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('admit' as const), caller: fc.nat(), bed: fc.nat(3) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('discharge' as const), pick: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('elsewhere' as const),
      pick: fc.nat(),
      room: fc.constantFrom('R-1', 'R-2'),
    }),
  },
)

/** Two apps on one file, one remembering ward occupant list pages and the oracle (two-apps.ts). */
const apps = (cacheBytes: number) => twoApps('WARD_OCCUPANT_PAGE_CACHE_BYTES', cacheBytes, CALLERS)
const appsFor = (t: Test, cacheBytes: number) => twoAppsFor(t, 'WARD_OCCUPANT_PAGE_CACHE_BYTES', cacheBytes, CALLERS)

t.test('a remembered page is the page a fresh read gives, whatever changed in between', async (t) => {
  const numRuns = propertyRuns(15)
  let lists = 0
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(8_388_608, 3_000, 1),
      fc.array(STEP_ARB, { minLength: 8, maxLength: 25 }),
      async (cacheBytes, steps) => {
        const { remembering, oracle, elsewhere, tokens, close } = await apps(cacheBytes)
        try {
          const ids: string[] = []
          let admissions = 0
          for (const step of steps) {
            const token = tokens[('caller' in step ? step.caller : 0) % tokens.length] as string
            if (step.kind === 'admit') {
              const payload = { encounter: `e-${admissions++}`, bed: `B-${step.bed}`, occupiedBy: 'p' }
              const res = await remembering.inject({
                method: 'POST',
                url: '/ward-occupants',
                headers: bearer(token),
                payload,
              })
              if (res.statusCode === 200) ids.push(res.json().id)
            } else if (step.kind === 'discharge' && ids.length > 0) {
              const url = `/ward-occupants/${ids[step.pick % ids.length]}`
              await remembering.inject({
                method: 'PATCH',
                url,
                headers: bearer(tokens[2] as string),
                payload: { discharge: true },
              })
            } else if (step.kind === 'elsewhere' && ids.length > 0) {
              elsewhere
                .prepare('UPDATE ward_occupants SET room = ? WHERE id = ?')
                .run(step.room, ids[step.pick % ids.length])
            } else if (step.kind === 'list') {
              const url = `/ward-occupants?${QUERIES[step.query % QUERIES.length]}`
              const got = await remembering.inject({ url, headers: bearer(token) })
              const want = await oracle.inject({ url, headers: bearer(token) })
              if (got.statusCode !== 200 || got.body !== want.body) return false
              lists++
            }
          }
          return true
        } finally {
          await close()
        }
      },
    ),
    { numRuns },
  )
  t.ok(lists > numRuns * 2.5, `${lists} pages compared in ${numRuns} runs`)
})

/** Admits an occupant to a new bed through `app`, as the caller of `headers`. */
function admitter(app: Awaited<ReturnType<typeof buildApp>>, headers: Record<string, string>) {
  return (bed: string) =>
    app.inject({
      method: 'POST',
      url: '/ward-occupants',
      headers,
      payload: { encounter: `e-${bed}`, bed, occupiedBy: 'p' },
    })
}

const pageReads = async (db: Parameters<typeof statementsRunDuring>[0], run: () => Promise<void>) =>
  (await statementsRunDuring(db, run)).filter((s) => s.sql.includes('json_object') && s.sql.includes('OFFSET')).length

t.test('the same page asked again is not read again until something changes', async (t) => {
  const { remembering, elsewhere, tokens } = await appsFor(t, 8_388_608)
  const nurseA = bearer(tokens[0] as string)
  const admit = admitter(remembering, nurseA)
  const { id } = (await admit('B-1')).json()
  const list = () => remembering.inject({ url: '/ward-occupants?dischargedAt=null', headers: nurseA })

  let bodies: string[] = []
  const reads = await pageReads(remembering.db, async () => {
    bodies = [(await list()).body, (await list()).body, (await list()).body]
  })
  t.equal(reads, 1, 'three identical requests, one read')
  t.equal(new Set(bodies).size, 1)
  t.equal(JSON.parse(bodies[0] as string).total, 1)

  t.equal((await admit('B-2')).statusCode, 200)
  t.equal(JSON.parse((await list()).body).total, 2, 'an admission through this app counts on the next page')

  elsewhere.prepare('UPDATE ward_occupants SET discharged_at = 1, discharged_by = ? WHERE id = ?').run('shell', id)
  t.equal(JSON.parse((await list()).body).total, 1, 'a discharge by another process counts too')

  // Another facility never gets this facility's page.
  const nurseB = await remembering.inject({
    url: '/ward-occupants?dischargedAt=null',
    headers: bearer(tokens[1] as string),
  })
  t.equal(JSON.parse(nurseB.body).total, 0, 'facility B sees none of A')
})

t.test('WARD_OCCUPANT_PAGE_CACHE_BYTES=0 reads every page', async (t) => {
  const { oracle, tokens } = await appsFor(t, 8_388_608)
  const reads = await pageReads(oracle.db, async () => {
    for (let i = 0; i < 3; i++) await oracle.inject({ url: '/ward-occupants', headers: bearer(tokens[0] as string) })
  })
  t.equal(reads, 0, 'an empty list has no page to read')
  await oracle.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(tokens[0] as string),
    payload: { encounter: 'e', bed: 'B-1', occupiedBy: 'p' },
  })
  const counted = await pageReads(oracle.db, async () => {
    for (let i = 0; i < 3; i++) await oracle.inject({ url: '/ward-occupants', headers: bearer(tokens[0] as string) })
  })
  t.equal(counted, 3)
})

t.test('a number too large to be one is refused, so it can never share a page with null', async (t) => {
  // Found by a review: 400 digits read as Infinity, which JSON writes as null, the key of `$ne=null`.
  const { remembering, tokens } = await appsFor(t, 8_388_608)
  const nurseA = bearer(tokens[0] as string)
  const admit = admitter(remembering, nurseA)
  const { id } = (await admit('B-1')).json()
  await admit('B-2')
  const discharged = await remembering.inject({
    method: 'PATCH',
    url: `/ward-occupants/${id}`,
    headers: nurseA,
    payload: { discharge: true },
  })
  t.equal(discharged.statusCode, 200)
  const huge = await remembering.inject({
    url: `/ward-occupants?dischargedAt[$ne]=${'9'.repeat(400)}`,
    headers: nurseA,
  })
  t.equal(huge.statusCode, 400)
  t.match(huge.json().message, /must be a number that fits/)
  const list = await remembering.inject({ url: '/ward-occupants?dischargedAt[$ne]=null', headers: nurseA })
  t.equal(list.json().total, 1, 'only the discharged occupant')
})
