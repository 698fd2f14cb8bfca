import type { LightMyRequestResponse } from 'fastify'
import t from 'tap'
import type { Role } from '../../db/tokens.js'
import { bearer } from '../helper.js'
import {
  allows,
  buildMatrixApp,
  type Caller,
  canSee,
  makeRecord,
  observe,
  ownerOf,
  type ResourceName,
  snapshot,
  TARGETS,
  type Target,
} from './isolation-helper.js'

// Every operation on one record × every caller (read, write, admin; bound to A, to B, unbound) ×
// records of A, of B and of no facility: a caller reaches only what its facility allows (404 for
// the rest, as for an unknown id), a read token changes nothing (403), and a refused request
// leaves the record byte-identical (body and ETag, seen by a token of its facility) and the
// database as it was.

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE'

interface Op {
  resource: ResourceName
  name: string
  method: Method
  path: (id: string) => string
  payload?: object
  headers?: Record<string, string>
  /** the least role the route needs */
  role: Role
  /** a successful call changes the record, so it gets a fresh one */
  changes: boolean
  /** the answer when the caller may do it; 200 unless said otherwise */
  allowed?: (caller: Caller) => { status: number; code?: string }
}

const byId = (resource: ResourceName) => (id: string) => `/${resource}/${id}`
const stale = { 'if-match': '"99"' }
const movesTo = (facility: string) => (caller: Caller) =>
  caller.facility !== null && caller.facility !== facility
    ? { status: 403, code: 'FACILITY_FORBIDDEN' }
    : { status: 200 }

const OPS: Op[] = [
  ...(['ward-occupants', 'form-templates'] as const).flatMap((resource): Op[] => [
    { resource, name: 'GET', method: 'GET', path: byId(resource), role: 'read', changes: false },
    { resource, name: 'DELETE', method: 'DELETE', path: byId(resource), role: 'write', changes: true },
    {
      resource,
      name: 'DELETE If-Match *',
      method: 'DELETE',
      path: byId(resource),
      headers: { 'if-match': '*' },
      role: 'write',
      changes: true,
    },
    {
      resource,
      name: 'DELETE stale If-Match',
      method: 'DELETE',
      path: byId(resource),
      headers: stale,
      role: 'write',
      changes: false,
      allowed: () => ({ status: 412, code: 'PRECONDITION_FAILED' }),
    },
  ]),
  ...(
    [
      ['provider', { provider: 'dr-x' }],
      ['discharge', { discharge: true }],
      ['re-open', { discharge: false }],
    ] as const
  ).map(([name, payload]): Op => {
    return {
      resource: 'ward-occupants',
      name: `PATCH ${name}`,
      method: 'PATCH',
      path: byId('ward-occupants'),
      payload,
      role: 'write',
      changes: true,
    }
  }),
  ...(
    [
      ['name', { name: 'taken over' }],
      ['hide', { hide: true }],
      ['items', { items: [{ type: 'date' }] }],
      ['description null', { description: null }],
    ] as const
  ).map(([name, payload]): Op => {
    return {
      resource: 'form-templates',
      name: `PATCH ${name}`,
      method: 'PATCH',
      path: byId('form-templates'),
      payload,
      role: 'write',
      changes: true,
    }
  }),
  ...['A', 'B'].map(
    (facility): Op => ({
      resource: 'form-templates',
      name: `PATCH facility ${facility}`,
      method: 'PATCH',
      path: byId('form-templates'),
      payload: { facility },
      role: 'write',
      changes: true,
      allowed: movesTo(facility),
    }),
  ),
  {
    resource: 'ward-occupants',
    name: 'PATCH stale If-Match',
    method: 'PATCH',
    path: byId('ward-occupants'),
    payload: { provider: 'dr-y' },
    headers: stale,
    role: 'write',
    changes: false,
    allowed: () => ({ status: 412, code: 'PRECONDITION_FAILED' }),
  },
  { resource: 'notifications', name: 'GET', method: 'GET', path: byId('notifications'), role: 'read', changes: false },
  {
    resource: 'notifications',
    name: 'POST seen',
    method: 'POST',
    path: (id) => `/notifications/${id}/seen`,
    role: 'read',
    changes: true,
  },
]

/** Printing changes nothing, so a read token may do it (GET, and POST with caller data). */
const RENDER_OPS: Op[] = (['GET', 'POST'] as const).map((method) => ({
  resource: 'form-templates',
  name: `${method} render`,
  method,
  path: (id: string) => `/form-templates/${id}/render`,
  payload: method === 'POST' ? {} : undefined,
  role: 'read',
  changes: false,
}))

function expected(op: Op, caller: Caller, target: Target): { status: number; code?: string } {
  if (!allows(caller, op.role)) return { status: 403, code: 'ROLE_FORBIDDEN' }
  if (!canSee(caller, op.resource, target)) return { status: 404, code: 'NOT_FOUND' }
  return op.allowed?.(caller) ?? { status: 200 }
}

t.test('every operation on one record, by every caller, on records of every facility', async (t) => {
  const { app, callers, root } = await buildMatrixApp(t)
  const ops = [...OPS, ...RENDER_OPS]
  const fixtures = new Map<string, string>()
  for (const [resource, targets] of Object.entries(TARGETS) as [ResourceName, Target[]][]) {
    for (const target of targets)
      fixtures.set(`${resource}/${target.name}`, await makeRecord(app, root, resource, target))
  }
  const send = (op: Op, caller: Caller, id: string): Promise<LightMyRequestResponse> =>
    app.inject({
      method: op.method,
      url: op.path(id),
      headers: { ...bearer(caller.token), ...op.headers },
      ...(op.payload === undefined ? {} : { payload: op.payload }),
    })
  const unknownId = 'ffffffffffffffffffffffff'

  for (const op of ops) {
    t.test(`${op.resource}: ${op.name}`, async (t) => {
      // The answer for an id that does not exist, to compare the 404s with.
      const unknown = (await send(op, root, unknownId)).json() as { message: string }
      for (const caller of callers) {
        for (const target of TARGETS[op.resource]) {
          const cell = `${caller.name} on ${target.name}`
          const want = expected(op, caller, target)
          if (want.status === 200 && op.changes) {
            const fresh = await makeRecord(app, root, op.resource, target)
            const res = await send(op, caller, fresh)
            t.equal(res.statusCode, 200, `${cell}: allowed`, { body: res.body.slice(0, 300) })
            continue
          }
          const id = fixtures.get(`${op.resource}/${target.name}`) as string
          const owner = ownerOf(callers, op.resource, target)
          const before = { db: snapshot(app.db), record: await observe(app, op.resource, id, owner) }
          const res = await send(op, caller, id)
          t.equal(res.statusCode, want.status, `${cell}: ${want.status}`, { body: res.body.slice(0, 300) })
          if (want.code) t.equal(res.json().code, want.code, `${cell}: ${want.code}`)
          if (want.status === 404) {
            t.equal(res.json().message, unknown.message.replace(unknownId, id), `${cell}: as for an unknown id`)
          }
          t.equal(await observe(app, op.resource, id, owner), before.record, `${cell}: the record is byte-identical`)
          t.ok(snapshot(app.db) === before.db, `${cell}: the database is unchanged`)
        }
      }
    })
  }
})
