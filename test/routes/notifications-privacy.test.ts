import t, { type Test } from 'tap'
import { createNotificationRepository } from '../../db/repositories/notifications.js'
import type { Role } from '../../domain/principal.js'
import { type Expected, expectedList } from '../fuzz/list-reference.js'
import { bearer, buildTestApp, type TestApp } from '../helper.js'
import { client } from './notifications-fixtures.js'

// Two leaks closed: the notifications of a ward occupant without a facility reached every
// facility (they are for callers without a facility only, like the occupant), and `seenBy` named
// the readers of other facilities (a caller bound to a facility learns only of the readers who
// marked it with a token of that facility, and of itself).

type Binding = 'A' | 'B' | null
const ROLES: Role[] = ['read', 'write', 'admin']
const BINDINGS: Binding[] = ['A', 'B', null]

interface Caller {
  name: string
  account: string
  facility: Binding
  role: Role
  token: string
}

/** Nine callers, one per role and binding; the account is `<role>-<A|B|any>`. */
async function matrix(t: Test) {
  const { app } = await buildTestApp(t)
  const callers: Caller[] = []
  for (const role of ROLES) {
    for (const facility of BINDINGS) {
      const account = `${role}-${facility ?? 'any'}`
      const { token } = app.tokens.create({ account, role, facility, label: account })
      callers.push({ name: `${role}/${facility ?? 'unbound'}`, account, facility, role, token })
    }
  }
  const by = (role: Role, facility: Binding) =>
    callers.find((c) => c.role === role && c.facility === facility) as Caller
  return { app, callers, by }
}

function occupants(app: TestApp, token: string) {
  return {
    post: (payload: object) => app.inject({ method: 'POST', url: '/ward-occupants', headers: bearer(token), payload }),
    patch: (id: string, payload: object) =>
      app.inject({ method: 'PATCH', url: `/ward-occupants/${id}`, headers: bearer(token), payload }),
    get: (id: string) => app.inject({ url: `/ward-occupants/${id}`, headers: bearer(token) }),
  }
}

async function ok<T = Record<string, unknown>>(res: Promise<{ statusCode: number; body: string }>): Promise<T> {
  const answer = await res
  if (answer.statusCode !== 200) throw new Error(`expected 200, got ${answer.statusCode}: ${answer.body}`)
  return JSON.parse(answer.body) as T
}

const idsOf = (body: { notifications: { id: string }[] }) => body.notifications.map((n) => n.id)

t.test('the notifications of a ward occupant without a facility reach only callers without one', async (t) => {
  const { app, callers, by } = await matrix(t)
  const root = by('write', null)
  // An occupant without a facility: admitted, discharged, re-opened (three notifications).
  const loose = await ok<{ id: string }>(
    occupants(app, root.token).post({ encounter: 'enc-x', bed: 'X-1', room: 'R-9', occupiedBy: 'patient-x' }),
  )
  await ok(occupants(app, root.token).patch(loose.id, { discharge: true }))
  await ok(occupants(app, root.token).patch(loose.id, { discharge: false }))
  // An occupant of A, and a notification for every facility (what `notify` without --facility posts).
  await ok(occupants(app, by('write', 'A').token).post({ encounter: 'enc-a', bed: 'A-1', occupiedBy: 'patient-a' }))
  const everywhere = createNotificationRepository(app.db).create({
    code: 'new-queue-item',
    type: 'warehouse',
    title: 'Stock arrived',
    body: 'Gloves are in.',
    facility: null,
  }).id

  const all = await ok<{
    notifications: { id: string; createdAt: number; code: string; meta?: Record<string, unknown> }[]
  }>(client(app, by('admin', null).token).list())
  // The ids come from the table (plain SQL), never from the answers under test.
  const produced = app.db
    .prepare(
      `SELECT id, code, created_at, unbound_only FROM notifications
       WHERE json_extract(meta, '$.wardOccupantId') = ? ORDER BY created_at, id`,
    )
    .all(loose.id) as { id: string; code: string; created_at: number; unbound_only: number }[]
  const leaked = produced.map((n) => n.id)
  t.same(
    produced.map((n) => [n.code, n.unbound_only]),
    [
      ['bed-occupied', 1],
      ['patient-discharged', 1],
      ['discharge-reverted', 1],
    ],
    'the facility-less occupant produced its three notifications, each marked unbound_only',
  )
  const ofA = app.db
    .prepare("SELECT id FROM notifications WHERE json_extract(meta, '$.encounter') = 'enc-a'")
    .pluck()
    .get() as string
  t.same(idsOf(all), [...leaked, ofA, everywhere], 'an unbound admin sees them all, oldest first')
  const [occupied] = all.notifications
  t.same(occupied, {
    id: leaked[0],
    createdAt: produced[0]?.created_at,
    code: 'bed-occupied',
    type: 'ward',
    title: 'Bed X-1 occupied',
    body: 'Encounter enc-x now occupies bed X-1 (room R-9).',
    meta: { wardOccupantId: loose.id, bed: 'X-1', room: 'R-9', encounter: 'enc-x' },
    seenBy: [],
  })

  for (const caller of callers) {
    const c = client(app, caller.token)
    const expected =
      caller.facility === null
        ? [...leaked, ofA, everywhere]
        : caller.facility === 'A'
          ? [ofA, everywhere]
          : [everywhere]
    // by list, with filters that aim at the leaked records
    const lists: [string, string[]][] = [
      ['', expected],
      ['$limit=1000&$sort[createdAt]=-1&$sort[id]=-1', [...expected].reverse()],
      ['facility=null', expected.filter((id) => id !== ofA)],
      ['facility[$exists]=false&type=ward', caller.facility === null ? leaked : []],
      [
        'code[$in][]=bed-occupied&code[$in][]=discharge-reverted',
        expected.filter((id) => id !== everywhere && id !== leaked[1]),
      ],
      [`id=${leaked[0]}`, caller.facility === null ? [leaked[0] as string] : []],
      [`id[$in][]=${leaked[1]}&id[$in][]=${leaked[2]}`, caller.facility === null ? leaked.slice(1) : []],
      [
        `$or[0][id]=${leaked[0]}&$or[1][title]=Stock%20arrived`,
        caller.facility === null ? [leaked[0] as string, everywhere] : [everywhere],
      ],
      ['$unseen=true', expected],
      ['$unseen=false', []],
      ['seenBy[$ne]=read-any', expected],
      ['$select[]=meta&$limit=2&$skip=0', expected.slice(0, 2)],
    ]
    for (const [query, ids] of lists) {
      const body = await ok<{ notifications: { id: string }[]; total: number }>(c.list(query))
      t.same(idsOf(body), ids, `${caller.name} ?${query}`)
      if (!query.includes('$limit')) t.equal(body.total, ids.length, `${caller.name} ?${query}: total`)
    }
    // by the unseen count, with and without filters
    t.same(await ok(c.unseen()), { count: expected.length }, `${caller.name}: unseen count`)
    t.same(
      await ok(c.unseen('type=ward&facility=null')),
      { count: caller.facility === null ? 3 : 0 },
      `${caller.name}: unseen count, filtered`,
    )
    // by id
    for (const id of leaked) {
      const got = await c.get(id)
      t.equal(got.statusCode, caller.facility === null ? 200 : 404, `${caller.name} gets ${id}`)
    }
    // the occupant itself is just as hidden
    t.equal((await occupants(app, caller.token).get(loose.id)).statusCode, caller.facility === null ? 200 : 404)
  }
  // by id and by marking seen, once every list is checked (marks change the unbound callers' lists)
  for (const caller of callers) {
    const c = client(app, caller.token)
    for (const id of leaked) {
      const got = await c.get(id)
      const marked = await c.seen(id)
      if (caller.facility === null) {
        t.equal(got.statusCode, 200, `${caller.name} gets ${id}`)
        t.equal(got.json().meta.wardOccupantId, loose.id)
        t.equal(marked.statusCode, 200, `${caller.name} marks ${id}`)
      } else {
        for (const [what, res] of [
          ['GET', got],
          ['POST seen', marked],
        ] as const) {
          t.equal(res.statusCode, 404, `${caller.name}: ${what} ${id} is 404`)
          t.same(
            res.json(),
            {
              statusCode: 404,
              code: 'NOT_FOUND',
              error: 'Not Found',
              name: 'NotFound',
              message: `notification ${id} not found`,
            },
            `${caller.name}: ${what} ${id} is a 404 like an unknown id`,
          )
        }
      }
    }
  }
  const marks = app.db.prepare('SELECT account FROM notification_seen ORDER BY account').pluck().all()
  t.same(
    marks,
    ['admin-any', 'admin-any', 'admin-any', 'read-any', 'read-any', 'read-any', 'write-any', 'write-any', 'write-any'],
    'only callers without a facility could mark them',
  )
  t.same(await ok(client(app, by('read', null).token).unseen()), { count: 2 }, 'and their marks count')
})

t.test('a notification without a facility posted directly is still for every facility', async (t) => {
  const { app, callers } = await matrix(t)
  const repo = createNotificationRepository(app.db)
  const base = { code: 'c', type: 't', title: 'x', body: 'y', facility: null }
  const forAll = repo.create(base).id
  const unboundOnly = repo.create({ ...base, unboundOnly: true }).id
  for (const caller of callers) {
    const listed = idsOf(await ok(client(app, caller.token).list()))
    t.same(listed, caller.facility === null ? [forAll, unboundOnly] : [forAll], caller.name)
  }
  t.throws(
    () => repo.create({ ...base, facility: 'A', unboundOnly: true }),
    /cannot have a facility/,
    'unboundOnly is only for notifications without a facility',
  )
  t.throws(
    () => app.db.prepare("UPDATE notifications SET facility = 'A' WHERE id = ?").run(unboundOnly),
    /CHECK constraint failed/,
    'the database refuses it too',
  )
})

t.test('seenBy names only the readers of the caller’s own facility (and the caller)', async (t) => {
  const { app, callers, by } = await matrix(t)
  const repo = createNotificationRepository(app.db)
  const base = { code: 'c', type: 'ward', title: 'x', body: 'y' }
  const everywhere = repo.create({ ...base, facility: null, createdAt: 1000 }).id
  const onlyA = repo.create({ ...base, facility: null, createdAt: 2000 }).id
  const wardA = repo.create({ ...base, facility: 'A', createdAt: 3000 }).id
  // One account with tokens of A and of B: it marks with its A token.
  const floatA = app.tokens.create({ account: 'float', role: 'read', facility: 'A' }).token
  const floatB = app.tokens.create({ account: 'float', role: 'read', facility: 'B' }).token

  const mark = (token: string, id: string) => ok<{ seenBy: string[] }>(client(app, token).seen(id))
  await mark(by('read', 'A').token, everywhere)
  await mark(by('write', 'B').token, everywhere)
  await mark(by('read', null).token, everywhere)
  await mark(floatA, everywhere)
  await mark(by('read', 'A').token, onlyA)
  await mark(by('admin', null).token, wardA)
  await mark(by('write', 'A').token, wardA)

  // What each caller may learn: by GET (with its ETag), by list, by $select.
  const expected = (caller: { facility: Binding; account: string }): Record<string, string[]> => {
    if (caller.facility === null)
      return {
        [everywhere]: ['read-A', 'write-B', 'read-any', 'float'],
        [onlyA]: ['read-A'],
        [wardA]: ['admin-any', 'write-A'],
      }
    if (caller.facility === 'A') return { [everywhere]: ['read-A', 'float'], [onlyA]: ['read-A'], [wardA]: ['write-A'] }
    const own = caller.account === 'float' ? ['float'] : []
    return { [everywhere]: ['write-B', ...own], [onlyA]: [] }
  }
  const viewers = [
    ...callers,
    { name: 'float with its B token', account: 'float', facility: 'B' as Binding, token: floatB },
  ]
  for (const caller of viewers) {
    const c = client(app, caller.token)
    const want = expected(caller)
    for (const [id, seenBy] of Object.entries(want)) {
      const res = await c.get(id)
      t.equal(res.statusCode, 200, `${caller.name} gets ${id}`)
      t.same(res.json().seenBy, seenBy, `${caller.name}: seenBy of ${id} by GET`)
      t.equal(res.headers.etag, `"${1 + seenBy.length}"`, `${caller.name}: the ETag counts only those readers`)
    }
    const listed = await ok<{ notifications: { id: string; seenBy: string[] }[] }>(c.list())
    t.same(
      Object.fromEntries(listed.notifications.map((n) => [n.id, n.seenBy])),
      want,
      `${caller.name}: seenBy by list`,
    )
    const selected = await ok<{ notifications: { id: string; seenBy: string[] }[] }>(
      c.list('$select[]=seenBy&$sort[createdAt]=-1'),
    )
    t.same(
      selected.notifications,
      Object.entries(want)
        .map(([id, seenBy]) => ({ id, seenBy }))
        .reverse(),
      `${caller.name}: seenBy by $select`,
    )
    if (caller.facility === 'B') t.equal((await c.get(wardA)).statusCode, 404, `${caller.name}: wardA is A's`)
  }

  // The seenBy filter matches only the readers the caller may learn of.
  const filters: [string, (caller: { facility: Binding; account: string }) => string[]][] = [
    ['seenBy=read-A', (c) => (c.facility === 'B' ? [] : [everywhere, onlyA])],
    ['seenBy=write-B', (c) => (c.facility === 'A' ? [] : [everywhere])],
    ['seenBy=read-any', (c) => (c.facility === null ? [everywhere] : [])],
    ['seenBy=admin-any', (c) => (c.facility === null ? [wardA] : [])],
    ['seenBy=float', (c) => (c.facility === 'B' && c.account !== 'float' ? [] : [everywhere])],
    ['seenBy[$in][]=read-A&seenBy[$in][]=read-any', (c) => (c.facility === 'B' ? [] : [everywhere, onlyA])],
    [
      '$or[0][seenBy]=read-A&$or[1][seenBy]=admin-any',
      (c) => (c.facility === 'B' ? [] : c.facility === 'A' ? [everywhere, onlyA] : [everywhere, onlyA, wardA]),
    ],
    ['seenBy[$ne]=read-A', (c) => (c.facility === 'B' ? [everywhere, onlyA] : c.facility === 'A' ? [wardA] : [wardA])],
    [
      'seenBy[$nin][]=write-B',
      (c) => (c.facility === 'A' ? [everywhere, onlyA, wardA] : c.facility === 'B' ? [onlyA] : [onlyA, wardA]),
    ],
    // a list is never missing (null), read or not: these tell nothing about readers
    ['seenBy[$exists]=true', (c) => (c.facility === 'B' ? [everywhere, onlyA] : [everywhere, onlyA, wardA])],
    ['seenBy[$exists]=false', () => []],
    ['seenBy=null', () => []],
  ]
  for (const caller of viewers) {
    for (const [query, want] of filters) {
      const body = await ok<{ notifications: { id: string }[]; total: number }>(client(app, caller.token).list(query))
      t.same(idsOf(body), want(caller), `${caller.name} ?${query}`)
      t.equal(body.total, want(caller).length, `${caller.name} ?${query}: total`)
    }
  }

  // $unseen and the unseen count are about the caller's account, whatever its facility.
  const unseen: [Caller | (typeof viewers)[number], string[]][] = [
    [by('read', 'A'), [wardA]],
    [by('write', 'A'), [everywhere, onlyA]],
    [by('write', 'B'), [onlyA]],
    [by('read', 'B'), [everywhere, onlyA]],
    [by('read', null), [onlyA, wardA]],
    [by('admin', null), [everywhere, onlyA]],
    [viewers.at(-1) as (typeof viewers)[number], [onlyA]],
  ]
  for (const [caller, want] of unseen) {
    const c = client(app, caller.token)
    t.same(idsOf(await ok(c.list('$unseen=true'))), want, `${caller.name}: $unseen=true`)
    t.same(await ok(c.unseen()), { count: want.length }, `${caller.name}: unseen count`)
    // Seen: what the caller may read (the audience rule over plain SQL rows) and has a mark on.
    const reference = expectedList(
      app.db,
      'notifications',
      { role: 'read', ...caller },
      { $unseen: 'false' },
    ) as Expected
    t.same(idsOf(await ok(c.list('$unseen=false'))), reference.ids, `${caller.name}: $unseen=false`)
    t.same(idsOf(await ok(c.list(`seenBy=${caller.account}`))), reference.ids, `${caller.name}: seenBy=<me>`)
  }

  // Marking answers the record as the marker may see it.
  const marked = await client(app, by('read', 'B').token).seen(onlyA)
  t.same(marked.json().seenBy, ['read-B'], 'a B reader marking sees only B readers')
  t.equal(marked.headers.etag, '"2"')
  const again = await client(app, by('read', 'A').token).get(onlyA)
  t.same(again.json().seenBy, ['read-A'], 'and A does not learn of it')
  t.equal(again.headers.etag, '"2"', 'not even by the ETag')
  t.same(
    app.db
      .prepare('SELECT account, facility FROM notification_seen WHERE notification_id = ? ORDER BY account')
      .all(onlyA),
    [
      { account: 'read-A', facility: 'A' },
      { account: 'read-B', facility: 'B' },
    ],
    "each mark keeps the facility of the reader's token",
  )
})
