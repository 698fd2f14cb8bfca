import t, { type Test } from 'tap'
import { type Expected, expectedList, parseQuery } from '../fuzz/list-reference.js'
import { bearer } from '../helper.js'
import {
  buildMatrixApp,
  canSee,
  makeRecord,
  type ResourceName,
  snapshot,
  TARGETS,
  type Target,
} from './isolation-helper.js'

// Lists, the unseen count and the audit trail × every caller × filters that try to widen the
// scope (facility=B, $or, $in, $ne, ids of other facilities): what a caller may not see is never
// listed or counted, what it may see is, and nothing changes.

const PLURALS: Record<ResourceName, string> = {
  'ward-occupants': 'wardOccupants',
  'form-templates': 'formTemplates',
  notifications: 'notifications',
}

/** Queries that try to reach other facilities; {A}, {B}, {none} stand for the fixture ids. */
const FILTERS = [
  '$limit=1000',
  'facility=B',
  'facility=A',
  'facility=null',
  'facility[$exists]=false',
  'facility[$in][]=A&facility[$in][]=B',
  'facility[$ne]=A',
  'facility[$nin][]=A&facility[$nin][]=B',
  'facility[$gt]=%20',
  '$or[0][facility]=A&$or[1][facility]=B',
  '$or[0][id]={A}&$or[1][id]={B}&$or[2][id]={none}',
  '$and[0][facility]=B&$and[1][id]={B}',
  'id={B}',
  'id={A}',
  'id[$in][]={A}&id[$in][]={B}&id[$in][]={none}',
  'id[$ne]=x&$sort[createdAt]=-1&$limit=1000',
  '$select[]=id&$select[]=facility&$limit=1000',
  '$skip=0&$limit=1000&$sort[facility]=1',
]

const RESOURCES = Object.keys(PLURALS) as ResourceName[]

async function setup(t: Test) {
  const matrix = await buildMatrixApp(t)
  const ids = new Map<string, string>()
  for (const resource of RESOURCES) {
    for (const target of TARGETS[resource]) {
      ids.set(`${resource}/${target.name}`, await makeRecord(matrix.app, matrix.root, resource, target))
    }
  }
  const fill = (resource: ResourceName, query: string) =>
    query.replace(/\{(\w+)\}/g, (_, name: string) => ids.get(`${resource}/${name}`) ?? 'x')
  return { ...matrix, ids, fill }
}

t.test('lists never show another facility’s records, whatever the filter', async (t) => {
  const { app, callers, ids, fill } = await setup(t)
  for (const resource of RESOURCES) {
    t.test(resource, async (t) => {
      for (const caller of callers) {
        for (const filter of FILTERS) {
          const query = fill(resource, filter)
          const cell = `${caller.name} ?${filter}`
          const before = snapshot(app.db)
          const res = await app.inject({ url: `/${resource}?${query}`, headers: bearer(caller.token) })
          t.equal(res.statusCode, 200, cell, { body: res.body.slice(0, 300) })
          const body = res.json() as Record<string, unknown>
          const listed = new Set((body[PLURALS[resource]] as { id: string }[]).map((r) => r.id))
          for (const target of TARGETS[resource]) {
            const id = ids.get(`${resource}/${target.name}`) as string
            if (!canSee(caller, resource, target)) t.notOk(listed.has(id), `${cell}: ${target.name} not listed`)
            else if (filter === '$limit=1000') t.ok(listed.has(id), `${cell}: ${target.name} listed`)
          }
          for (const record of body[PLURALS[resource]] as { facility?: string }[]) {
            if (caller.facility !== null && record.facility !== undefined) {
              t.equal(record.facility, caller.facility, `${cell}: only ${caller.facility} records`)
            }
          }
          if (caller.facility !== null && resource !== 'notifications' && filter === 'facility=B') {
            t.equal(body.total, caller.facility === 'B' ? listed.size : 0, `${cell}: total counts what it sees`)
          }
          t.ok(snapshot(app.db) === before, `${cell}: the database is unchanged`)
        }
      }
    })
  }
})

t.test('the unseen count counts only what the caller may list', async (t) => {
  const { app, callers, fill } = await setup(t)
  for (const caller of callers) {
    for (const filter of FILTERS.filter((f) => !f.includes('$select') && !f.includes('$sort'))) {
      const query = fill('notifications', filter)
      const cell = `${caller.name} ?${filter}`
      const count = await app.inject({ url: `/notifications/unseen-count?${query}`, headers: bearer(caller.token) })
      const list = await app.inject({ url: `/notifications?${query}&$unseen=true`, headers: bearer(caller.token) })
      t.equal(count.statusCode, 200, cell, { body: count.body.slice(0, 300) })
      // The reference: plain SQL rows, the audience rule and the filter applied in memory.
      const parsed = { ...parseQuery(query), $unseen: 'true', $limit: '0' }
      const reference = expectedList(app.db, 'notifications', caller, parsed)
      t.not(reference, 'invalid', `${cell}: a valid filter`)
      t.equal(count.json().count, (reference as Expected).total, `${cell}: the count of what the caller may list`)
      t.equal(list.json().total, (reference as Expected).total, `${cell}: the unseen list's total`)
    }
  }
})

t.test('audit: admins only; a bound admin sees its facility’s entries only', async (t) => {
  const { app, callers, ids } = await setup(t)
  // Changes by each facility's own writer, so that entries carry A, B and no facility.
  for (const caller of callers.filter((c) => c.role === 'write')) {
    await app.inject({
      method: 'PATCH',
      url: `/form-templates/${ids.get(`form-templates/${caller.facility ?? 'none'}`)}`,
      headers: bearer(caller.token),
      payload: { name: `renamed by ${caller.name}` },
    })
  }
  const queries = (target: Target, resource: ResourceName) => {
    const id = ids.get(`${resource}/${target.name}`) as string
    return [`recordId=${id}`, `resource=${resource}&recordId=${id}`, `resource=${resource}&limit=1000`]
  }
  for (const caller of callers) {
    const all = await app.inject({ url: '/audit?$limit=1000', headers: bearer(caller.token) })
    if (caller.role !== 'admin') {
      t.equal(all.statusCode, 403, `${caller.name}: 403`)
      t.equal(all.json().code, 'ROLE_FORBIDDEN', `${caller.name}: ROLE_FORBIDDEN`)
      continue
    }
    const entries = all.json().entries as { facility: string | null }[]
    t.ok(entries.length > 0, `${caller.name}: sees entries`)
    if (caller.facility !== null) {
      t.ok(
        entries.every((e) => e.facility === caller.facility),
        `${caller.name}: every entry is of ${caller.facility}`,
      )
    }
    for (const resource of ['ward-occupants', 'form-templates'] as const) {
      for (const target of TARGETS[resource]) {
        for (const query of queries(target, resource)) {
          const res = await app.inject({ url: `/audit?${query}`, headers: bearer(caller.token) })
          const found = (res.json().entries as { recordId: string }[]).some(
            (e) => e.recordId === ids.get(`${resource}/${target.name}`),
          )
          t.equal(found, canSee(caller, resource, target), `${caller.name} ?${query}: ${target.name} entries`)
        }
      }
    }
  }
})
