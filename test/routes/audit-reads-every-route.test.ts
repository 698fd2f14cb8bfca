import Fastify from 'fastify'
import fp from 'fastify-plugin'
import t, { type Test } from 'tap'
import app, { serverOptions } from '../../app.js'
import { defaultConfig } from '../../config.js'
import { bearer } from '../helper.js'
import { ackOf, openSender } from '../hl7/client.js'
import { adt } from '../hl7/messages.js'

/**
 * docs/SECURITY.md promises a read-log entry for every read of a record route. Rather than a list
 * of routes someone has to remember to extend, this test asks the app which GET (and HEAD) routes
 * it registers and calls each one: a route answering without a token must be one of the known
 * public pages, and every other one must leave an entry, unless it is named below with the reason.
 */

const NOT_READS: Record<string, string> = {
  '/audit': 'the audit itself (admin only): logging its reads would log every look at the log',
  '/events': 'the live feed: one stream carries many records; it is logged as a request, not per event',
}

/** Pages and files that hold no patient data and answer without a token. */
const PUBLIC = /^\/(?:health|openapi\.json|favicon\.ico|board(?:\/.*)?|docs(?:\/.*)?)$/

const SOME_ID = '0123456789abcdef01234567'

interface Registered {
  method: string
  url: string
}

/** The app as buildApp makes it, noting every route it registers on the way. */
async function appWithRoutes(t: Test) {
  const config = defaultConfig({
    DATABASE_PATH: ':memory:',
    LOG_LEVEL: 'silent',
    RATE_LIMIT_MAX: 0,
    AUDIT_READS: true,
    // Every route is first called without a token: those 401s must not turn into 429s.
    AUTH_FAILURE_LIMIT: 10_000,
    // The ADT listener on a free port: the parked messages its routes resolve come through it.
    HL7_PORT: 0,
  })
  const fastify = Fastify(serverOptions(config))
  const routes: Registered[] = []
  fastify.addHook('onRoute', function noteRoute(route) {
    for (const method of [route.method].flat()) routes.push({ method, url: route.url })
  })
  await fastify.register(fp(app), { config })
  await fastify.ready()
  t.teardown(() => fastify.close())
  return { app: fastify, routes }
}

/** A URL that reaches the route: every path parameter an id (unknown ids are read attempts too). */
function urlOf(route: string): string {
  return route.replace(/:[A-Za-z]+/g, SOME_ID).replace(/\*$/, 'x')
}

t.test('every GET and HEAD route is public, audited, or named here with the reason it is not', async (t) => {
  const { app, routes } = await appWithRoutes(t)
  const admin = app.tokens.create({ account: 'admin-1', role: 'admin', facility: null, label: null }).token
  const expected: string[] = []
  const exempted = new Set<string>()
  for (const { method, url } of routes.filter((r) => r.method === 'GET' || r.method === 'HEAD')) {
    const anonymous = await app.inject({ method, url: urlOf(url) })
    if (anonymous.statusCode !== 401) {
      t.match(url, PUBLIC, `${method} ${url} answers without a token (${anonymous.statusCode}): a public page`)
      continue
    }
    if (url in NOT_READS) {
      exempted.add(url)
      continue
    }
    await app.inject({ method, url: urlOf(url), headers: bearer(admin) })
    expected.push(`${method} ${url}`)
  }
  await app.writes.run(() => undefined) // the entries are written with the next group commit
  const logged = app.db.prepare('SELECT route FROM read_log ORDER BY seq').pluck().all() as string[]
  t.same(logged, expected, 'one entry per call, for each route that reads')
  t.ok(expected.includes('GET /beds'), 'the beds (with their occupants) are among them')
  t.ok(expected.length >= 16, `${expected.length} audited routes found`)
  t.same([...exempted].sort(), Object.keys(NOT_READS).sort(), 'each exemption names a route that exists')
})

/** A write route's answers that carry no record, with the reason. */
const NO_RECORD: Record<string, string> = {
  'POST /events/tickets': 'a stream ticket: a credential, no record',
}

interface Call {
  body?: unknown
  /** Sent with this Idempotency-Key (the same key twice: the second answer is a replay). */
  key?: string
}

/**
 * The calls made to each write route, on a record that exists. Each list holds a call that changes
 * the record and calls that change nothing but still answer it (a no-op patch, a repeated mark, an
 * Idempotency-Key replay): those are reads, and must leave a read-log entry.
 */
const WRITE_CALLS: Record<string, Call[]> = {
  'POST /ward-occupants': [
    { body: { encounter: 'E-1', bed: 'B-2', occupiedBy: 'patient-2' }, key: 'admit-2' },
    { body: { encounter: 'E-1', bed: 'B-2', occupiedBy: 'patient-2' }, key: 'admit-2' },
  ],
  'PATCH /ward-occupants/:id': [
    { body: {} },
    { body: { discharge: false } },
    { body: { provider: 'dr-1' }, key: 'provider' },
    { body: { provider: 'dr-1' }, key: 'provider' },
    { body: { provider: 'dr-1' } },
  ],
  'DELETE /ward-occupants/:id': [{ key: 'remove' }, { key: 'remove' }],
  'POST /form-templates': [{ body: { type: 'intake' } }],
  'PATCH /form-templates/:id': [{ body: {} }, { body: { name: 'Intake' } }, { body: { name: 'Intake' } }],
  'DELETE /form-templates/:id': [{}],
  'POST /form-templates/:id/render': [{ body: {} }],
  'POST /notifications/:id/seen': [{}, {}, { key: 'mark' }, { key: 'mark' }],
  'POST /events/tickets': [{}],
  'PUT /beds/:bed/state': [{ body: { state: 'cleaning' } }, { body: { state: 'cleaning' } }],
  'POST /hl7/messages/:id/retry': [{}],
  'POST /hl7/messages/:id/dismiss': [{}],
}

/** How many read-log and audit-log entries there are, once the queued read entries are written. */
async function entries(app: Awaited<ReturnType<typeof appWithRoutes>>['app']): Promise<number> {
  await app.writes.run(() => undefined)
  const count = (table: string) => app.db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number
  return count('read_log') + count('audit_log')
}

t.test('every answer of a write route that carries a record leaves a read-log or a change-log entry', async (t) => {
  const { app, routes } = await appWithRoutes(t)
  const admin = app.tokens.create({ account: 'admin-1', role: 'admin', facility: null, label: null }).token
  const send = (method: string, url: string, call: Call = {}) =>
    app.inject({
      method: method as 'POST',
      url,
      headers: { ...bearer(admin), ...(call.key ? { 'idempotency-key': call.key } : {}) },
      ...(call.body === undefined ? {} : { payload: call.body as object }),
    })
  // One record of each kind (the admission produces a notification addressed to the ward).
  const occupant = (
    await send('POST', '/ward-occupants', { body: { encounter: 'E', bed: 'B-1', occupiedBy: 'p' } })
  ).json()
  const template = (await send('POST', '/form-templates', { body: { type: 'intake', template: 'p= type' } })).json()
  const notification = (await send('GET', '/notifications')).json().notifications[0]
  const routeIds = await parkedMessages(t, app, send)
  const idFor: Record<string, string> = {
    'ward-occupants': occupant.id,
    'form-templates': template.id,
    notifications: notification.id,
  }
  const writes = routes.filter((r) => r.method !== 'GET' && r.method !== 'HEAD')
  // Deletes last: the other calls need the records.
  writes.sort((a, b) => Number(a.method === 'DELETE') - Number(b.method === 'DELETE'))
  t.ok(writes.length >= 9, `${writes.length} write routes found`)
  let recordAnswers = 0
  for (const { method, url } of writes) {
    const name = `${method} ${url}`
    const calls = WRITE_CALLS[name]
    if (!calls) {
      t.fail(`${name} is not in WRITE_CALLS: say how to call it, so its answers are checked`)
      continue
    }
    const path = url
      .replace(':id', routeIds[name] ?? idFor[url.split('/')[1] ?? ''] ?? SOME_ID)
      .replace(':bed', occupant.bed)
    for (const call of calls) {
      const before = await entries(app)
      const res = await send(method, path, call)
      t.equal(res.statusCode, 200, `${name} ${JSON.stringify(call)} answered`)
      const after = await entries(app)
      if (name in NO_RECORD) {
        t.notOk(res.body.includes(occupant.id) || 'id' in res.json(), `${name} answers no record`)
        continue
      }
      recordAnswers++
      t.ok(after > before, `${name} ${JSON.stringify(call)}: the answer left an entry (${before} → ${after})`)
    }
  }
  t.ok(recordAnswers >= 15, `${recordAnswers} answers with a record checked`)
})

/**
 * Two ADT messages parked for an unknown encounter, sent by a real MLLP client: one to retry once
 * its encounter has been admitted (it then applies), one to dismiss.
 */
async function parkedMessages(
  t: Test,
  app: Awaited<ReturnType<typeof appWithRoutes>>['app'],
  send: (method: string, url: string, call?: Call) => Promise<{ statusCode: number; json(): unknown }>,
): Promise<Record<string, string>> {
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  for (const [control, encounter] of [
    ['R-1', 'ADT-RETRY'],
    ['D-1', 'ADT-DISMISS'],
  ] as const) {
    const ack = ackOf(await sender.send(adt({ event: 'A03', control, encounter, facility: 'A' })))
    t.equal(ack.code, 'AA', `${control} acknowledged (and parked)`)
  }
  const admitted = await send('POST', '/ward-occupants', {
    body: { encounter: 'ADT-RETRY', bed: 'B-9', occupiedBy: 'p-9', facility: 'A', occupiedAt: Date.UTC(2026, 0, 1) },
  })
  t.equal(admitted.statusCode, 200, 'the encounter of the message to retry admitted')
  const listed = (await send('GET', '/hl7/messages?status=parked')).json() as {
    hl7Messages: { id: string; controlId: string }[]
  }
  const parked = listed.hl7Messages
  const idOf = (control: string) => parked.find((m) => m.controlId === control)?.id ?? SOME_ID
  return { 'POST /hl7/messages/:id/retry': idOf('R-1'), 'POST /hl7/messages/:id/dismiss': idOf('D-1') }
}
