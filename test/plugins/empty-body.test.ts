import Fastify, { type RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import t, { type Test } from 'tap'
import app, { serverOptions } from '../../app.js'
import { defaultConfig } from '../../config.js'
import { bearer } from '../helper.js'
import { ackOf, openSender } from '../hl7/client.js'
import { adt } from '../hl7/messages.js'

// Generic HTTP clients send `Content-Type: application/json` and nothing after it to an action
// that takes no body (retry, dismiss, mark seen, a ticket, a delete): that is no body, not a
// malformed one. A route that needs a body still refuses an empty one with a clear 400.

const JSON_HEADER = { 'content-type': 'application/json' }
const EMPTY_BODY_REFUSED = {
  code: 'FST_ERR_CTP_EMPTY_JSON_BODY',
  message: "Body cannot be empty when content-type is set to 'application/json'",
}
const BODY_LESS = [
  'POST /hl7/messages/:id/retry',
  'POST /hl7/messages/:id/dismiss',
  'POST /notifications/:id/seen',
  'POST /events/tickets',
  'DELETE /ward-occupants/:id',
  'DELETE /form-templates/:id',
]
const WITH_BODY = [
  'POST /ward-occupants',
  'PATCH /ward-occupants/:id',
  'POST /form-templates',
  'PATCH /form-templates/:id',
  'POST /form-templates/:id/render',
]

/** The app as buildApp makes it, with its write routes noted, the ADT listener on a free port. */
async function appWithRoutes(t: Test) {
  const config = defaultConfig({ DATABASE_PATH: ':memory:', LOG_LEVEL: 'silent', RATE_LIMIT_MAX: 0, HL7_PORT: 0 })
  const fastify = Fastify(serverOptions(config))
  const writes = new Map<string, RouteOptions>()
  fastify.addHook('onRoute', function noteRoute(route) {
    for (const method of [route.method].flat())
      if (method !== 'GET' && method !== 'HEAD') writes.set(`${method} ${route.url}`, route)
  })
  await fastify.register(fp(app), { config })
  await fastify.ready()
  t.teardown(() => fastify.close())
  const admin = fastify.tokens.create({ account: 'admin-1', role: 'admin', facility: null, label: null }).token
  return { app: fastify, writes, admin }
}

type App = Awaited<ReturnType<typeof appWithRoutes>>['app']

/** Records for every body-less action to act on: an admission (and its notification), a form, two parked messages. */
async function records(t: Test, app: App, admin: string): Promise<Record<string, string>> {
  const post = (url: string, payload: object) =>
    app.inject({ method: 'POST', url, headers: bearer(admin), payload }).then((res) => res.json().id as string)
  const occupant = await post('/ward-occupants', { encounter: 'E-1', bed: 'B-1', occupiedBy: 'p-1' })
  const template = await post('/form-templates', { type: 'intake' })
  const notifications = await app.inject({ url: '/notifications', headers: bearer(admin) })
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  for (const control of ['R-1', 'D-1']) {
    const ack = ackOf(await sender.send(adt({ event: 'A03', control, encounter: `ADT-${control}`, facility: 'A' })))
    t.equal(ack.code, 'AA', `${control} parked`)
  }
  const parked = (await app.inject({ url: '/hl7/messages?status=parked', headers: bearer(admin) })).json()
    .hl7Messages as { id: string; controlId: string }[]
  const idOf = (control: string) => parked.find((message) => message.controlId === control)?.id as string
  return {
    'POST /hl7/messages/:id/retry': idOf('R-1'),
    'POST /hl7/messages/:id/dismiss': idOf('D-1'),
    'POST /notifications/:id/seen': notifications.json().notifications[0].id,
    'DELETE /ward-occupants/:id': occupant,
    'DELETE /form-templates/:id': template,
    'PATCH /ward-occupants/:id': occupant,
    'PATCH /form-templates/:id': template,
    'POST /form-templates/:id/render': template,
  }
}

/** The answer each body-less action gives on its record when it runs (the retry's encounter is still unknown). */
const RAN: Record<string, { status: number; code?: string }> = {
  'POST /hl7/messages/:id/retry': { status: 409, code: 'HL7_STILL_PARKED' },
  'POST /hl7/messages/:id/dismiss': { status: 200 },
  'POST /notifications/:id/seen': { status: 200 },
  'POST /events/tickets': { status: 200 },
  'DELETE /ward-occupants/:id': { status: 200 },
  'DELETE /form-templates/:id': { status: 200 },
}

t.test('a body-less action takes an empty JSON body; a route with a body refuses it with a clear 400', async (t) => {
  const { app, writes, admin } = await appWithRoutes(t)
  for (const name of [...BODY_LESS, ...WITH_BODY]) t.ok(writes.has(name), `${name} exists`)
  const ids = await records(t, app, admin)
  // Deletes last: the other calls need the records.
  const order = [...writes.keys()].sort((a, b) => Number(a.startsWith('DELETE')) - Number(b.startsWith('DELETE')))
  for (const name of order) {
    const [method, url] = name.split(' ') as [string, string]
    const res = await app.inject({
      method: method as 'POST',
      url: url.replace(':id', ids[name] ?? '0123456789abcdef01234567'),
      headers: { ...bearer(admin), ...JSON_HEADER },
    })
    // A route named in neither list: one that declares no body must take the empty one; of one
    // that declares a body, this test cannot tell whether it may be missing.
    const declaresBody = (writes.get(name) as RouteOptions).schema?.body !== undefined
    if (!WITH_BODY.includes(name) && !BODY_LESS.includes(name) && declaresBody) continue
    if (WITH_BODY.includes(name)) {
      t.equal(res.statusCode, 400, `${name}: 400`)
      t.match(res.json(), EMPTY_BODY_REFUSED, `${name}: the body must not be empty`)
      continue
    }
    t.not(res.json().code, EMPTY_BODY_REFUSED.code, `${name}: the empty body is no body`)
    const ran = RAN[name]
    if (ran === undefined) continue // a route this test does not know: only that the body passed
    t.equal(res.statusCode, ran.status, `${name}: ran (${res.body.slice(0, 80)})`)
    if (ran.code) t.equal(res.json().code, ran.code)
  }
})

t.test('a body-less action still refuses a body that is there and wrong', async (t) => {
  const { app, admin } = await appWithRoutes(t)
  for (const payload of ['{"x":1}', '[]', '{', 'null x']) {
    const res = await app.inject({
      method: 'POST',
      url: '/events/tickets',
      headers: { ...bearer(admin), ...JSON_HEADER },
      payload,
    })
    t.equal(res.statusCode, 400, `${payload}: 400 (${res.json().code})`)
  }
})

t.test('over a real socket, fetch with Content-Type: application/json and no body', async (t) => {
  const { app, admin } = await appWithRoutes(t)
  const ids = await records(t, app, admin)
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  const post = (url: string) =>
    fetch(`${base}${url}`, { method: 'POST', headers: { authorization: `Bearer ${admin}`, ...JSON_HEADER } })
  const dismissed = await post(`/hl7/messages/${ids['POST /hl7/messages/:id/dismiss']}/dismiss`)
  t.equal(dismissed.status, 200)
  t.equal(((await dismissed.json()) as { status: string }).status, 'dismissed')
  t.equal((await post(`/notifications/${ids['POST /notifications/:id/seen']}/seen`)).status, 200)
  t.equal((await post('/events/tickets')).status, 200)
  const refused = await post('/ward-occupants')
  t.equal(refused.status, 400)
  t.match(await refused.json(), EMPTY_BODY_REFUSED)
})
