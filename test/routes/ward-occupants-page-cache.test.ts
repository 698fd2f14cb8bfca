import fc from 'fast-check'
import t, { type Test } from 'tap'
import type { buildApp } from '../../app.js'
import { statementsRunDuring } from '../db/captured-statements.js'
import { bearer } from '../helper.js'
import { propertyRuns } from '../property-runs.js'
import {
  type DrawnQuery,
  type QueryParts,
  queryArbitrary,
  queryPairArbitrary,
  queryText,
} from './page-cache-queries.js'
import { type Caller, twoAppsFor } from './two-apps.js'

/**
 * Ward occupant list pages are remembered until the database changes (db/read-memo.ts). The
 * oracle is a second app on the same database file that remembers nothing: whatever happens,
 * through the first app or through another connection (an admin's shell), the remembering app
 * answers what it answers.
 */

/** Every part of a list query the remembered page's key must hold, with values that change the page. */
const PARTS: QueryParts = {
  filter: ['', 'dischargedAt=null', 'dischargedAt[$ne]=null', 'room=R-1', 'bed[$in][]=B-1&bed[$in][]=B-2'],
  sort: ['', '$sort[occupiedAt]=1', '$sort[occupiedAt]=-1', '$sort[bed]=-1', '$sort[room]=1&$sort[occupiedAt]=-1'],
  limit: ['', '$limit=1', '$limit=2', '$limit=3'],
  skip: ['', '$skip=1', '$skip=2'],
  select: ['', '$select[]=bed', '$select[]=room'],
}

/** Tokens that differ in one thing only: the facility, or the role. */
const CALLERS: Caller[] = [
  { account: 'nurse', role: 'write', facility: 'A' },
  { account: 'nurse', role: 'write', facility: 'B' },
  { account: 'nurse', role: 'write', facility: null },
  { account: 'nurse', role: 'read', facility: 'A' },
]

/** Two apps on one file, one remembering ward occupant list pages and the oracle (two-apps.ts). */
const appsFor = (t: Test, cacheBytes: number) => twoAppsFor(t, 'WARD_OCCUPANT_PAGE_CACHE_BYTES', cacheBytes, CALLERS)

/**
 * A ward whose pages differ by every part of a query: occupiedAt in another order than createdAt
 * (the default sort), rooms and beds that interleave, some discharged, two facilities.
 */
async function seededWard(t: Test) {
  const apps = await appsFor(t, 8_388_608)
  const admin = bearer(apps.tokens[2] as string)
  const ids: string[] = []
  for (let i = 0; i < 8; i++) {
    const res = await apps.remembering.inject({
      method: 'POST',
      url: '/ward-occupants',
      headers: admin,
      payload: {
        encounter: `e-${i}`,
        bed: `B-${(i % 4) + 1}`,
        room: `R-${(i % 3) + 1}`,
        occupiedBy: `p-${i}`,
        facility: i % 3 === 2 ? 'B' : 'A',
        createdAt: 1000 + i,
        occupiedAt: 5000 - ((i * 3) % 8),
      },
    })
    if (res.statusCode !== 200) throw new Error(`seed ${i}: ${res.body}`)
    ids.push(res.json().id)
    if (i < 4) {
      const discharge = { method: 'PATCH' as const, url: `/ward-occupants/${ids[i]}`, headers: admin }
      await apps.remembering.inject({ ...discharge, payload: { discharge: true } })
    }
  }
  /** The answers of both apps to one drawn query, remembering first. */
  async function ask(query: DrawnQuery) {
    const request = {
      url: `/ward-occupants?${queryText(PARTS, query)}`,
      headers: bearer(apps.tokens[query.caller] as string),
    }
    const got = await apps.remembering.inject(request)
    const want = await apps.oracle.inject(request)
    return {
      url: request.url,
      caller: query.caller,
      got: `${got.statusCode} ${got.body}`,
      want: `${want.statusCode} ${want.body}`,
    }
  }
  return { ...apps, ids, ask }
}

function sameAnswer(answer: { url: string; caller: number; got: string; want: string }, when: string): void {
  if (answer.got !== answer.want)
    throw new Error(`${when}: caller ${answer.caller} ${answer.url}\n got ${answer.got}\nwant ${answer.want}`)
}

t.test('two queries asked in the same state: the page remembered for one never answers the other', async (t) => {
  const ward = await seededWard(t)
  let differing = 0
  await fc.assert(
    fc.asyncProperty(queryPairArbitrary(PARTS, CALLERS.length), async ([first, second]) => {
      const one = await ward.ask(first)
      const other = await ward.ask(second)
      const again = await ward.ask(first)
      sameAnswer(one, 'first')
      sameAnswer(other, 'then the other')
      sameAnswer(again, 'then the first again')
      if (one.want !== other.want) differing++
    }),
    { numRuns: propertyRuns(200) },
  )
  t.ok(differing > 0, `${differing} pairs had different pages`)
})

/** A change made between two asks of the same query: by another connection, or through the app. */
const CHANGE_ARB = fc.record({
  pick: fc.nat(7),
  kind: fc.constantFrom('room', 'discharged', 'occupiedAt', 'facility', 'patch-provider'),
  value: fc.nat(5),
})

t.test('a query asked, a commit from another connection (or this app), the query again: the fresh page', async (t) => {
  const ward = await seededWard(t)
  const { elsewhere, remembering, ids } = ward
  const columns = {
    room: (v: number) => ['room', `R-${(v % 3) + 1}`],
    discharged: (v: number) => ['discharged_at', v % 2 === 0 ? null : 9000 + v],
    occupiedAt: (v: number) => ['occupied_at', 4990 + v * 7],
    facility: (v: number) => ['facility', v % 2 === 0 ? 'A' : 'B'],
  } as const
  await fc.assert(
    fc.asyncProperty(queryArbitrary(PARTS, CALLERS.length), CHANGE_ARB, async (query, change) => {
      sameAnswer(await ward.ask(query), 'before')
      const id = ids[change.pick] as string
      if (change.kind === 'patch-provider') {
        const headers = bearer(ward.tokens[2] as string)
        const payload = { provider: `dr-${change.value}` }
        await remembering.inject({ method: 'PATCH', url: `/ward-occupants/${id}`, headers, payload })
      } else {
        const [column, value] = columns[change.kind](change.value)
        // Another process: an admin's shell, the CLI. Its own version, as any writer bumps it.
        const update = elsewhere.prepare(`UPDATE ward_occupants SET ${column} = ?, version = version + 1 WHERE id = ?`)
        try {
          update.run(value, id)
        } catch (error) {
          // A reopened bed already taken (the one-bed rule): no change, and the page stays right.
          if (!String((error as { code?: string }).code).startsWith('SQLITE_CONSTRAINT')) throw error
        }
      }
      sameAnswer(await ward.ask(query), `after ${change.kind} of ${change.pick}`)
    }),
    { numRuns: propertyRuns(150) },
  )
  t.pass('every page asked after a change was the fresh one')
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
