import { mkdtempSync, rmSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { openStream, waitUntil } from '../feed/helpers.js'
import { type Caller, makeRecord, type ResourceName } from '../security/isolation-helper.js'
import { bearer, buildOidcApp, personToken, startTestProvider } from './setup.js'

// A provider token bound to facility A keeps every promise a service token of A keeps: no record
// of B through any route, none of B's events on the live feed, its reads in the read audit, and an
// admin of A sees A's audit only.

const ID_ROUTES: [string, (id: string) => string, object?][] = [
  ['GET', (id) => `/ward-occupants/${id}`],
  ['PATCH', (id) => `/ward-occupants/${id}`, { provider: 'dr-y' }],
  ['DELETE', (id) => `/ward-occupants/${id}`],
  ['GET', (id) => `/form-templates/${id}`],
  ['PATCH', (id) => `/form-templates/${id}`, { name: 'renamed' }],
  ['DELETE', (id) => `/form-templates/${id}`],
  ['GET', (id) => `/notifications/${id}`],
  ['POST', (id) => `/notifications/${id}/seen`],
]
const LISTS = ['/ward-occupants', '/form-templates', '/notifications', '/beds', '/audit']

t.test('a provider token of facility A reaches nothing of B, through every route', async (t) => {
  const provider = await startTestProvider(t)
  const { app, admin } = await buildOidcApp(t, provider, { AUDIT_READS: true })
  const root = { token: admin } as Caller
  const ids: Record<string, Record<'A' | 'B', string>> = {}
  for (const resource of ['ward-occupants', 'form-templates', 'notifications'] as ResourceName[]) {
    ids[resource] = {
      A: await makeRecord(app, root, resource, { name: 'A', facility: 'A' }),
      B: await makeRecord(app, root, resource, { name: 'B', facility: 'B' }),
    }
  }
  const adminA = await personToken(provider, 'ann', ['ward-admin'], 'A')
  for (const [method, path, payload] of ID_ROUTES) {
    const resource = path('x').split('/')[1] as string
    const other = await app.inject({
      method: method as 'GET',
      url: path(ids[resource]?.B as string),
      headers: bearer(adminA),
      payload,
    })
    t.equal(other.statusCode, 404, `${method} ${resource} of B: 404, as an unknown id`)
  }
  for (const url of LISTS) {
    const res = await app.inject({ url, headers: bearer(adminA) })
    t.equal(res.statusCode, 200, url)
    t.notMatch(res.body, /"facility":"B"/, `${url}: nothing of B`)
  }
  const audit = (await app.inject({ url: '/audit', headers: bearer(adminA) })).json().entries
  t.ok(audit.length > 0, 'the audit shows A')
  const create = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(adminA),
    payload: { encounter: 'e', bed: 'b9', occupiedBy: 'p', facility: 'B' },
  })
  t.equal(create.statusCode, 403, 'naming another facility in a body')

  // The read audit names the provider account.
  await app.inject({ url: `/ward-occupants/${ids['ward-occupants']?.A}`, headers: bearer(adminA) })
  const readsOf = app.db.prepare('SELECT count(*) FROM read_log WHERE record_id = ?').pluck()
  await waitUntil(() => (readsOf.get(ids['ward-occupants']?.A) as number) > 0, 'the read in the read log')
  const reads = app.db
    .prepare('SELECT account, token_id, facility FROM read_log WHERE record_id = ?')
    .all(ids['ward-occupants']?.A)
  t.same(reads, [{ account: 'oidc:ann', token_id: 'oidc:ann', facility: 'A' }])
})

t.test('the live feed: a ticket of a provider token of A carries its facility', async (t) => {
  const provider = await startTestProvider(t)
  const dir = mkdtempSync(join(tmpdir(), 'oidc-feed-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const { app, admin } = await buildOidcApp(t, provider, { DATABASE_PATH: join(dir, 'ward.db') })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const viewer = await personToken(provider, 'vic', ['ward-viewer'], 'A')
  const issued = await app.inject({ method: 'POST', url: '/events/tickets', headers: bearer(viewer) })
  t.equal(issued.statusCode, 200, issued.body)
  const stream = await openStream(`${base}/events?ticket=${issued.json().ticket}&resources=ward-occupants`)
  t.teardown(() => stream.close())
  t.equal(stream.status, 200)
  for (const facility of ['B', 'A']) {
    const res = await app.inject({
      method: 'POST',
      url: '/ward-occupants',
      headers: bearer(admin),
      payload: { encounter: 'e', bed: `bed-${facility}`, occupiedBy: 'p', facility },
    })
    t.equal(res.statusCode, 200)
  }
  await stream.until((s) => s.changes().length >= 1)
  t.same(
    stream.changes().map((e) => JSON.parse(e.data).bed),
    ['bed-A'],
    "nothing of B: the stream has the token's facility",
  )
  const other = await personToken(provider, 'bea', ['ward-viewer'], 'B')
  const ticketB = (await app.inject({ method: 'POST', url: '/events/tickets', headers: bearer(other) })).json().ticket
  const streamB = await openStream(`${base}/events?ticket=${ticketB}&resources=ward-occupants`)
  t.teardown(() => streamB.close())
  await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(admin),
    payload: { encounter: 'e', bed: 'bed-A2', occupiedBy: 'p', facility: 'A' },
  })
  await stream.until((s) => s.changes().length >= 2)
  t.same(streamB.changes().length, 0, "B's stream got none of A's")
})
