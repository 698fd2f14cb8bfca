import fc from 'fast-check'
import t, { type Test } from 'tap'
import { createNotificationRepository, type NewNotification } from '../../db/repositories/notifications.js'
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
 * Inbox pages are remembered until the database changes (db/read-memo.ts). The oracle is a second
 * app on the same database file that remembers nothing: whatever happens, through either app or
 * through another connection (as the CLI writes), the remembering app answers what it answers.
 */

/** Every part of an inbox query the remembered page's key must hold, with values that change the page. */
const PARTS: QueryParts = {
  unseen: ['', '$unseen=true', '$unseen=false'],
  sort: ['', '$sort[createdAt]=-1', '$sort[createdAt]=1'],
  limit: ['', '$limit=1', '$limit=2', '$limit=50'],
  skip: ['', '$skip=1', '$skip=2'],
}

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
  createdAt: fc.integer({ min: 0, max: 50 }),
})

/** Two apps on one file, one remembering notification pages and the oracle (two-apps.ts). */
const appsFor = (t: Test, cacheBytes: number) => twoAppsFor(t, 'NOTIFICATION_PAGE_CACHE_BYTES', cacheBytes, CALLERS)

/**
 * An inbox whose pages differ by every part of a query and every caller: notifications of both
 * facilities and none, to everyone or to one account, at distinct times, some seen by some.
 */
async function seededInbox(t: Test) {
  const apps = await appsFor(t, 16_777_216)
  const here = createNotificationRepository(apps.remembering.db)
  const ids: string[] = []
  for (let i = 0; i < 9; i++) {
    const to = i % 4 === 1 ? ['nurse'] : i % 4 === 3 ? ['other'] : []
    const facility = [null, 'A', 'A', 'B'][i % 4] as string | null
    ids.push(here.create({ code: 'c', type: 'ward', title: `n-${i}`, body: 'b', facility, to, createdAt: 100 + i }).id)
  }
  for (const [i, caller] of [
    [1, 0],
    [2, 0],
    [0, 2],
    [2, 5],
    [6, 3],
  ]) {
    const headers = bearer(apps.tokens[caller as number] as string)
    await apps.remembering.inject({ method: 'POST', url: `/notifications/${ids[i as number]}/seen`, headers })
  }
  async function ask(query: DrawnQuery) {
    const request = {
      url: `/notifications?${queryText(PARTS, query)}`,
      headers: bearer(apps.tokens[query.caller] as string),
    }
    const got = await apps.remembering.inject(request)
    const want = await apps.oracle.inject(request)
    const answer = { got: `${got.statusCode} ${got.body}`, want: `${want.statusCode} ${want.body}` }
    return { ...answer, url: request.url, caller: query.caller }
  }
  return { ...apps, ids, ask }
}

function sameAnswer(answer: { url: string; caller: number; got: string; want: string }, when: string): void {
  if (answer.got !== answer.want)
    throw new Error(`${when}: caller ${answer.caller} ${answer.url}\n got ${answer.got}\nwant ${answer.want}`)
}

t.test('two queries asked in the same state: the page remembered for one never answers the other', async (t) => {
  const inbox = await seededInbox(t)
  let differing = 0
  await fc.assert(
    fc.asyncProperty(queryPairArbitrary(PARTS, CALLERS.length), async ([first, second]) => {
      const one = await inbox.ask(first)
      const other = await inbox.ask(second)
      const again = await inbox.ask(first)
      sameAnswer(one, 'first')
      sameAnswer(other, 'then the other')
      sameAnswer(again, 'then the first again')
      if (one.want !== other.want) differing++
    }),
    { numRuns: propertyRuns(200) },
  )
  t.ok(differing > 0, `${differing} pairs had different pages`)
})

t.test('a query asked, a change from another connection (or this app), the query again: the fresh page', async (t) => {
  const inbox = await seededInbox(t)
  const there = createNotificationRepository(inbox.elsewhere)
  const CHANGE_ARB = fc.oneof(
    fc.record({ kind: fc.constant('post' as const), note: NOTE_ARB }),
    fc.record({ kind: fc.constant('mark' as const), caller: fc.nat(CALLERS.length - 1), pick: fc.nat() }),
  )
  await fc.assert(
    fc.asyncProperty(queryArbitrary(PARTS, CALLERS.length), CHANGE_ARB, async (query, change) => {
      sameAnswer(await inbox.ask(query), 'before')
      // A notification written by another process (the CLI's `notify`), or a mark through this app.
      if (change.kind === 'post') inbox.ids.push(there.create(change.note).id)
      else {
        const url = `/notifications/${inbox.ids[change.pick % inbox.ids.length]}/seen`
        await inbox.remembering.inject({ method: 'POST', url, headers: bearer(inbox.tokens[change.caller] as string) })
      }
      sameAnswer(await inbox.ask(query), `after a ${change.kind}`)
    }),
    { numRuns: propertyRuns(150) },
  )
  t.pass('every page asked after a change was the fresh one')
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
