import t from 'tap'
import { bearer } from '../helper.js'
import { allows, BINDINGS, buildMatrixApp, makeRecord, type ResourceName, snapshot } from './isolation-helper.js'

// The write routes × every caller: creates get the caller's facility and naming another one is
// refused; a read token is refused (403) on every route that writes, found in the OpenAPI
// document so that a new route is covered without editing this file. Refusals change nothing.

type Method = 'POST' | 'PATCH' | 'DELETE' | 'PUT'

t.test('create: the facility comes from the token; naming another is refused; read tokens cannot', async (t) => {
  const { app, callers } = await buildMatrixApp(t)
  const bodies: Record<string, (n: number) => object> = {
    'ward-occupants': (n) => ({ encounter: `e-${n}`, bed: `bed-${n}`, occupiedBy: 'p-1' }),
    'form-templates': () => ({ type: 'intake' }),
  }
  let n = 0
  for (const [resource, body] of Object.entries(bodies)) {
    for (const caller of callers) {
      for (const named of [undefined, ...BINDINGS.filter((b) => b !== null)]) {
        const cell = `${resource} by ${caller.name} naming ${named ?? 'no facility'}`
        const before = snapshot(app.db)
        const payload = { ...body(n++), ...(named === undefined ? {} : { facility: named }) }
        const res = await app.inject({ method: 'POST', url: `/${resource}`, headers: bearer(caller.token), payload })
        const refusal = !allows(caller, 'write')
          ? 'ROLE_FORBIDDEN'
          : caller.facility !== null && named !== undefined && named !== caller.facility
            ? 'FACILITY_FORBIDDEN'
            : null
        if (refusal) {
          t.equal(res.statusCode, 403, `${cell}: 403`)
          t.equal(res.json().code, refusal, `${cell}: ${refusal}`)
          t.ok(snapshot(app.db) === before, `${cell}: the database is unchanged`)
        } else {
          t.equal(res.statusCode, 200, `${cell}: created`)
          t.equal(res.json().facility, caller.facility ?? named, `${cell}: facility ${caller.facility ?? named}`)
        }
      }
    }
  }
})

t.test('a read token is refused on every route that is not a GET (from the OpenAPI document)', async (t) => {
  const { app, callers, root } = await buildMatrixApp(t)
  const doc = (await app.inject({ url: '/openapi.json' })).json() as { paths: Record<string, Record<string, unknown>> }
  // Marking a notification seen and asking for a stream ticket change only the reader's own state,
  // documented as allowed to read tokens (CONTRACT.md §4); test/feed/tickets.test.ts covers the latter.
  const readerRoutes = new Set(['POST /notifications/{id}/seen', 'POST /events/tickets'])
  const routes = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.keys(methods)
      .map((m) => m.toUpperCase())
      .filter((m) => m !== 'GET' && m !== 'HEAD' && !readerRoutes.has(`${m} ${path}`))
      .map((method) => ({ method, path })),
  )
  t.ok(
    routes.length >= 6,
    `${routes.length} routes that write: ${routes.map((r) => `${r.method} ${r.path}`).join(', ')}`,
  )
  const readers = callers.filter((c) => c.role === 'read')
  for (const { method, path } of routes) {
    const resource = path.split('/')[1] as ResourceName | 'hl7'
    for (const reader of readers) {
      // The reader's own facility's record, so that a 404 cannot stand in for the 403.
      const target = { name: 'own', facility: reader.facility }
      const id = path.includes('{id}') ? await makeRecord(app, root, resource, target) : ''
      const before = snapshot(app.db)
      const res = await app.inject({
        method: method as Method,
        url: path.replace('{id}', id),
        headers: bearer(reader.token),
        payload: { type: 'intake', name: 'x', provider: 'dr', discharge: true, hide: true },
      })
      const cell = `${method} ${path} by ${reader.name}`
      if (path.endsWith('/render')) {
        t.ok(res.statusCode < 500, `${cell}: rendering is a read, answered ${res.statusCode}`)
      } else {
        t.equal(res.statusCode, 403, `${cell}: 403`)
        t.equal(res.json().code, 'ROLE_FORBIDDEN', `${cell}: ROLE_FORBIDDEN`)
      }
      t.ok(snapshot(app.db) === before, `${cell}: the database is unchanged`)
    }
  }
})
