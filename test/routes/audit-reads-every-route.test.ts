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
const PUBLIC =
  /^\/(?:health|openapi\.json|favicon\.ico|board(?:\/.*)?|docs(?:\/.*)?|fhir\/(?:metadata|\.well-known\/smart-configuration))$/

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
  t.equal(app.db.prepare('SELECT count(*) FROM audit_log').pluck().get(), 0, 'and no read is taken for a change')
  t.ok(expected.includes('GET /beds'), 'the beds (with their occupants) are among them')
  t.ok(expected.length >= 16, `${expected.length} audited routes found`)
  t.same([...exempted].sort(), Object.keys(NOT_READS).sort(), 'each exemption names a route that exists')
})

/** A write route's answers that carry no record, with the reason. */
const NO_RECORD: Record<string, string> = {
  'POST /events/tickets': 'a stream ticket: a credential, no record',
}

interface Request {
  body?: unknown
  /** Sent with this Idempotency-Key (the same key twice: the second answer is a replay). */
  key?: string
}

interface Call extends Omit<Request, 'body'> {
  /** The body, or how to make it from the id in the path (a FHIR PUT names its resource's id). */
  body?: unknown | ((id: string) => unknown)
  /** The answer's status, 200 unless said (a FHIR create is a 201). */
  status?: number
  /** The entries the answer must leave: read-log entries (of this route), change entries (`resource operation`). */
  reads: number
  changes: string[]
}

/** An answer that changed nothing but showed the record: one read-log entry, no change entry. */
const READ = { reads: 1, changes: [] }
/** An answer of a change: its change entry, and no read-log entry (the change entry is its trace). */
const change = (entry: string) => ({ reads: 0, changes: [entry] })

/**
 * The calls made to each write route, on a record that exists. Each list holds a call that changes
 * the record and calls that change nothing but still answer it (a no-op patch, a repeated mark, an
 * Idempotency-Key replay): those are reads, and must leave a read-log entry, and only that.
 */
const WRITE_CALLS: Record<string, Call[]> = {
  'POST /ward-occupants': [
    {
      body: { encounter: 'E-1', bed: 'B-2', occupiedBy: 'patient-2' },
      key: 'admit-2',
      ...change('ward-occupants create'),
    },
    { body: { encounter: 'E-1', bed: 'B-2', occupiedBy: 'patient-2' }, key: 'admit-2', ...READ },
  ],
  'PATCH /ward-occupants/:id': [
    { body: {}, ...READ },
    { body: { discharge: false }, ...READ },
    { body: { provider: 'dr-1' }, key: 'provider', ...change('ward-occupants patch') },
    { body: { provider: 'dr-1' }, key: 'provider', ...READ },
    { body: { provider: 'dr-1' }, ...READ },
  ],
  'DELETE /ward-occupants/:id': [
    { key: 'remove', ...change('ward-occupants delete') },
    { key: 'remove', ...READ },
  ],
  'POST /form-templates': [{ body: { type: 'intake' }, ...change('form-templates create') }],
  'PATCH /form-templates/:id': [
    { body: {}, ...READ },
    { body: { name: 'Intake' }, ...change('form-templates patch') },
    { body: { name: 'Intake' }, ...READ },
  ],
  'DELETE /form-templates/:id': [change('form-templates delete')],
  'POST /form-templates/:id/render': [{ body: {}, ...READ }],
  'POST /notifications/:id/seen': [READ, READ, { key: 'mark', ...READ }, { key: 'mark', ...READ }],
  'POST /events/tickets': [{ reads: 0, changes: [] }],
  'PUT /beds/:bed/state': [
    { body: { state: 'cleaning' }, reads: 0, changes: ['bed-states patch'] },
    { body: { state: 'cleaning' }, ...READ },
  ],
  // The message is answered (a read); applying it discharges the encounter it was parked for.
  'POST /hl7/messages/:id/retry': [{ reads: 1, changes: ['ward-occupants patch'] }],
  // The message log keeps who dismissed it (resolvedBy); no ward record changes.
  'POST /hl7/messages/:id/dismiss': [READ],
  // A create answers 201: not a read of a record that was there.
  'POST /fhir/Questionnaire': [
    { body: { resourceType: 'Questionnaire', status: 'active' }, status: 201, ...change('form-templates create') },
  ],
  'PUT /fhir/Questionnaire/:id': [
    {
      body: (id: string) => ({ resourceType: 'Questionnaire', id, status: 'active', title: 'Intake (FHIR)' }),
      ...change('form-templates patch'),
    },
    {
      body: (id: string) => ({ resourceType: 'Questionnaire', id, status: 'active', title: 'Intake (FHIR)' }),
      ...READ,
    },
  ],
}

interface Entries {
  /** The routes of the read-log entries, in order. */
  reads: string[]
  /** The change entries, as `resource operation`, in order. */
  changes: string[]
}

/** The read-log and audit-log entries after the `since` marks, once the queued read entries are written. */
async function entriesSince(
  app: Awaited<ReturnType<typeof appWithRoutes>>['app'],
  since: { read: number; change: number },
): Promise<Entries> {
  await app.writes.run(() => undefined)
  const reads = app.db.prepare('SELECT route FROM read_log WHERE seq > ? ORDER BY seq').pluck().all(since.read)
  const changes = app.db
    .prepare("SELECT resource || ' ' || operation FROM audit_log WHERE seq > ? ORDER BY seq")
    .pluck()
    .all(since.change)
  return { reads: reads as string[], changes: changes as string[] }
}

async function marks(app: Awaited<ReturnType<typeof appWithRoutes>>['app']): Promise<{ read: number; change: number }> {
  await app.writes.run(() => undefined)
  const last = (table: string) => app.db.prepare(`SELECT coalesce(max(seq), 0) FROM ${table}`).pluck().get() as number
  return { read: last('read_log'), change: last('audit_log') }
}

t.test('every answer of a write route leaves exactly its read-log entries and its change entries', async (t) => {
  const { app, routes } = await appWithRoutes(t)
  const admin = app.tokens.create({ account: 'admin-1', role: 'admin', facility: null, label: null }).token
  const send = (method: string, url: string, call: Request = {}) =>
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
    fhir: template.id,
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
      const label = `${name} ${JSON.stringify({ body: call.body, key: call.key })}`
      const since = await marks(app)
      const id = path.split('/').at(-1) ?? ''
      const body = typeof call.body === 'function' ? call.body(id) : call.body
      const res = await send(method, path, { ...call, body })
      t.equal(res.statusCode, call.status ?? 200, `${label} answered`)
      const left = await entriesSince(app, since)
      t.same(left.reads, Array(call.reads).fill(name), `${label}: ${call.reads} read-log entries`)
      t.same(left.changes, call.changes, `${label}: change entries ${JSON.stringify(call.changes)}`)
      if (name in NO_RECORD) {
        t.notOk(res.body.includes(occupant.id) || 'id' in res.json(), `${name} answers no record`)
        continue
      }
      recordAnswers++
      t.ok(left.reads.length + left.changes.length > 0, `${label}: the answer left a trace`)
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
  send: (method: string, url: string, call?: Request) => Promise<{ statusCode: number; json(): unknown }>,
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
