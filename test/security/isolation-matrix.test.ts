import assert from 'node:assert/strict'
import type { LightMyRequestResponse } from 'fastify'
import t from 'tap'
import type { Role } from '../../domain/principal.js'
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
  /** for `changes`: what the row must look like afterwards, read with plain SQL (undefined: gone) */
  effect?: (row: Row | undefined, caller: Caller) => void
}

type Row = Record<string, unknown>
const TABLES: Record<ResourceName, string> = {
  'ward-occupants': 'ward_occupants',
  'form-templates': 'form_templates',
  notifications: 'notifications',
}
const gone = (row: Row | undefined) => assert.equal(row, undefined, 'the row is gone')
/** The row has these column values, and the version given (2: changed once; 1: a patch that changed nothing). */
const has =
  (columns: Row, version: number | null = 2) =>
  (row: Row | undefined) => {
    assert.ok(row, 'the row is still there')
    assert.deepEqual(Object.fromEntries(Object.keys(columns).map((k) => [k, row[k]])), columns, 'the change is stored')
    if (version !== null) assert.equal(row.version, version, 'the version')
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
    { resource, name: 'DELETE', method: 'DELETE', path: byId(resource), role: 'write', changes: true, effect: gone },
    {
      resource,
      name: 'DELETE If-Match *',
      method: 'DELETE',
      path: byId(resource),
      headers: { 'if-match': '*' },
      role: 'write',
      changes: true,
      effect: gone,
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
      ['provider', { provider: 'dr-x' }, () => has({ provider: 'dr-x', discharged_at: null })],
      [
        'discharge',
        { discharge: true },
        (caller: Caller) => (row: Row | undefined) => {
          assert.ok(typeof row?.discharged_at === 'number', 'discharged')
          has({ discharged_by: caller.account })(row)
        },
      ],
      // On an active occupant a re-open changes nothing but the version.
      ['re-open', { discharge: false }, () => has({ discharged_at: null, discharged_by: null }, 1)],
    ] as const
  ).map(([name, payload, effect]): Op => {
    return {
      resource: 'ward-occupants',
      name: `PATCH ${name}`,
      method: 'PATCH',
      path: byId('ward-occupants'),
      payload,
      role: 'write',
      changes: true,
      effect: (row, caller) => effect(caller)(row),
    }
  }),
  ...(
    [
      ['name', { name: 'taken over' }, () => has({ name: 'taken over' })],
      [
        'hide',
        { hide: true },
        (caller: Caller) => (row: Row | undefined) => {
          assert.ok(typeof row?.hidden_at === 'number', 'hidden')
          has({ hidden_by: caller.account })(row)
        },
      ],
      [
        'items',
        { items: [{ type: 'date' }] },
        () => (row: Row | undefined) => {
          has({})(row)
          const items = JSON.parse(String(row?.items)) as Row[]
          assert.equal(items.length, 1)
          assert.equal(items[0]?.type, 'date', 'the items replaced')
        },
      ],
      // The fixture has no description: nothing to change.
      ['description null', { description: null }, () => has({ description: null }, 1)],
    ] as const
  ).map(([name, payload, effect]): Op => {
    return {
      resource: 'form-templates',
      name: `PATCH ${name}`,
      method: 'PATCH',
      path: byId('form-templates'),
      payload,
      role: 'write',
      changes: true,
      effect: (row, caller) => effect(caller)(row),
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
      // A template already in that facility does not change (version 1); the row says where it is.
      effect: has({ facility }, null),
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
            // The change itself, read back with plain SQL, never through the service's answer.
            const row = app.db.prepare(`SELECT * FROM ${TABLES[op.resource]} WHERE id = ?`).get(fresh) as
              | Row
              | undefined
            if (op.resource === 'notifications') {
              const mark = app.db
                .prepare('SELECT account FROM notification_seen WHERE notification_id = ? AND account = ?')
                .get(fresh, caller.account)
              t.ok(mark, `${cell}: marked seen by ${caller.account}`)
            } else t.doesNotThrow(() => op.effect?.(row, caller), `${cell}: the change is stored`)
            t.ok(op.effect || op.resource === 'notifications', `${op.name}: its effect is checked`)
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
