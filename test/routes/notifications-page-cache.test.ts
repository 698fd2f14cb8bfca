import fc from 'fast-check'
import t, { type Test } from 'tap'
import { createNotificationRepository, type NewNotification } from '../../db/repositories/notifications.js'
import { statementsRunDuring } from '../db/captured-statements.js'
import { bearer } from '../helper.js'
import { propertyRuns } from '../property-runs.js'
import { type Caller, twoApps, twoAppsFor } from './two-apps.js'

/**
 * Inbox pages are remembered until the database changes (db/read-memo.ts). The oracle is a second
 * app on the same database file that remembers nothing: whatever happens, through either app or
 * through another connection (as the CLI writes), the remembering app answers what it answers.
 */

// Pairs that differ in one part of the remembered page's key only ('' and '$unseen=true': $unseen).
const QUERIES = [
  '',
  '$unseen=true',
  '$limit=50',
  '$limit=2',
  '$limit=2&$skip=1',
  '$unseen=true&$sort[createdAt]=-1&$limit=50',
  '$unseen=false',
  '$sort[createdAt]=-1&$limit=3',
]

/** Tokens that differ in one thing only: the same account in two facilities, without one, and by role. */
const CALLERS: Caller[] = [
  { account: 'nurse', role: 'write', facility: 'A' },
  { account: 'nurse', role: 'write', facility: 'B' },
  { account: 'nurse', role: 'write', facility: null },
  { account: 'nurse', role: 'admin', facility: 'A' },
  { account: 'nurse', role: 'read', facility: 'A' },
  { account: 'other', role: 'write', facility: 'A' },
]

const NOTE_ARB: fc.Arbitrary<NewNotification> = fc.record({
  code: fc.constant('c'),
  type: fc.constant('ward'),
  title: fc.string({ maxLength: 4 }),
  body: fc.constant('b'),
  facility: fc.constantFrom(null, 'A', 'B'),
  to: fc.oneof(fc.constant<string[]>([]), fc.uniqueArray(fc.constantFrom('nurse', 'other'), { minLength: 1 })),
  createdAt: fc.integer({ min: 0, max: 5 }),
})

type Step =
  | { kind: 'list'; caller: number; query: number }
  | { kind: 'mark'; caller: number; pick: number }
  | { kind: 'post'; note: NewNotification; elsewhere: boolean }

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
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('mark' as const), caller: fc.nat(), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('post' as const), note: NOTE_ARB, elsewhere: fc.boolean() }) },
)

/** Two apps on one file, one remembering notification pages and the oracle (two-apps.ts). */
const apps = (cacheBytes: number) => twoApps('NOTIFICATION_PAGE_CACHE_BYTES', cacheBytes, CALLERS)
const appsFor = (t: Test, cacheBytes: number) => twoAppsFor(t, 'NOTIFICATION_PAGE_CACHE_BYTES', cacheBytes, CALLERS)

t.test('a remembered page is the page a fresh read gives, whatever changed in between', async (t) => {
  // Each run builds two apps on a new file: 15 runs by default, 75 in `npm run test:deep` (test/property-runs.ts).
  const numRuns = propertyRuns(15)
  let lists = 0
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(16_777_216, 3_000, 1),
      fc.array(NOTE_ARB, { maxLength: 6 }),
      fc.array(STEP_ARB, { minLength: 8, maxLength: 25 }),
      async (cacheBytes, first, steps) => {
        const { remembering, oracle, elsewhere, tokens, close } = await apps(cacheBytes)
        try {
          const here = createNotificationRepository(remembering.db)
          const there = createNotificationRepository(elsewhere)
          const ids = first.map((note) => here.create(note).id)
          for (const step of steps) {
            const token = tokens[('caller' in step ? step.caller : 0) % tokens.length] as string
            if (step.kind === 'post') ids.push((step.elsewhere ? there : here).create(step.note).id)
            else if (step.kind === 'mark' && ids.length > 0) {
              const id = ids[step.pick % ids.length] as string
              await remembering.inject({ method: 'POST', url: `/notifications/${id}/seen`, headers: bearer(token) })
            } else if (step.kind === 'list') {
              const url = `/notifications?${QUERIES[step.query % QUERIES.length]}`
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
  // About ten lists a run; the floor is a quarter of that.
  t.ok(lists > numRuns * 2.5, `${lists} pages compared in ${numRuns} runs`)
})

t.test('the same page asked again is not read again until something changes', async (t) => {
  const { remembering, elsewhere, tokens } = await appsFor(t, 16_777_216)
  const nurseA = bearer(tokens[0] as string)
  const here = createNotificationRepository(remembering.db)
  const note = { code: 'c', type: 'ward', title: 't', body: 'b', facility: 'A' }
  const { id } = here.create(note)
  const pageReads = async (run: () => Promise<void>) =>
    (await statementsRunDuring(remembering.db, run)).filter((s) => s.sql.includes('UNION ALL')).length
  const list = () => remembering.inject({ url: '/notifications?$unseen=true', headers: nurseA })

  let bodies: string[] = []
  t.equal(
    await pageReads(async () => {
      bodies = [(await list()).body, (await list()).body, (await list()).body]
    }),
    1,
    'three identical requests, one read',
  )
  t.equal(new Set(bodies).size, 1)
  t.equal(JSON.parse(bodies[0] as string).total, 1)

  // A change through this app: the mark counts on the next page.
  const marked = await remembering.inject({ method: 'POST', url: `/notifications/${id}/seen`, headers: nurseA })
  t.equal(marked.statusCode, 200)
  t.equal(JSON.parse((await list()).body).total, 0, 'marked seen: no longer unseen')

  // A change through another connection (the CLI): it counts on the next page too.
  createNotificationRepository(elsewhere).create(note)
  t.equal(JSON.parse((await list()).body).total, 1, 'a notification another process wrote')

  // Another caller never gets this caller's page: same account, another facility.
  const nurseB = await remembering.inject({ url: '/notifications?$unseen=true', headers: bearer(tokens[1] as string) })
  t.equal(JSON.parse(nurseB.body).total, 0, 'the same account in facility B sees none of A')
})

t.test('pages that differ only in $unseen are remembered apart', async (t) => {
  const { remembering, oracle, tokens } = await appsFor(t, 16_777_216)
  const nurseA = bearer(tokens[0] as string)
  const here = createNotificationRepository(remembering.db)
  const note = { code: 'c', type: 'ward', title: 't', body: 'b', facility: 'A' }
  const seen = here.create(note)
  here.create(note)
  const marked = await remembering.inject({ method: 'POST', url: `/notifications/${seen.id}/seen`, headers: nurseA })
  t.equal(marked.statusCode, 200)
  const totals: Record<string, number> = {}
  // Each asked twice: the second answer is the remembered one.
  for (const query of ['', '$unseen=true', '$unseen=false', '', '$unseen=true', '$unseen=false']) {
    const got = await remembering.inject({ url: `/notifications?${query}`, headers: nurseA })
    const want = await oracle.inject({ url: `/notifications?${query}`, headers: nurseA })
    t.equal(got.body, want.body, `?${query}: the page a fresh read gives`)
    totals[query] = JSON.parse(got.body).total
  }
  t.same(totals, { '': 2, '$unseen=true': 1, '$unseen=false': 1 })
})

t.test('NOTIFICATION_PAGE_CACHE_BYTES=0 reads every page', async (t) => {
  const { oracle, tokens } = await appsFor(t, 16_777_216)
  createNotificationRepository(oracle.db).create({ code: 'c', type: 'ward', title: 't', body: 'b', facility: null })
  const reads = await statementsRunDuring(oracle.db, async () => {
    for (let i = 0; i < 3; i++) await oracle.inject({ url: '/notifications', headers: bearer(tokens[0] as string) })
  })
  t.equal(reads.filter((s) => s.sql.includes('UNION ALL')).length, 3)
})

t.test('a page read inside a transaction that is then rolled back is not remembered', async (t) => {
  const { remembering } = await appsFor(t, 16_777_216)
  const repo = createNotificationRepository(remembering.db, { pageCacheBytes: 16_777_216 })
  const viewer = { account: 'nurse', facility: 'A', role: 'write' as const }
  const note = { code: 'c', type: 'ward', title: 't', body: 'b', facility: 'A' }
  t.equal(repo.listJson(viewer, {})?.total, 0)
  const rolledBack = remembering.db.transaction(() => {
    repo.create(note)
    t.equal(repo.listJson(viewer, {})?.total, 1, 'the transaction sees its own notification')
    throw new Error('roll back')
  })
  t.throws(() => rolledBack(), /roll back/)
  t.equal(repo.listJson(viewer, {})?.total, 0, 'after the rollback the page is read again')
})
