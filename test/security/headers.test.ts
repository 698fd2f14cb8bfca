import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import Fastify from 'fastify'
import t, { type Test } from 'tap'
import securityHeaders from '../../plugins/security-headers.js'
import { bearer, buildTestApp } from '../helper.js'

/** CONTRACT.md "Headers on answers", checked on the answers a client really gets. */

const API = {
  'cache-control': 'no-store',
  'content-type': 'application/json; charset=utf-8',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'content-security-policy': "frame-ancestors 'none'",
}
// helmet's page headers a JSON answer does not need (a browser renders nothing active from it)
const PAGE_ONLY = ['cross-origin-opener-policy', 'origin-agent-cluster', 'referrer-policy', 'x-xss-protection']

function apiSet(t: Test, res: LightMyRequestResponse, name: string) {
  for (const [header, value] of Object.entries(API)) t.equal(res.headers[header], value, `${name}: ${header}`)
  for (const header of PAGE_ONLY) t.notOk(header in res.headers, `${name}: no ${header}`)
  t.notOk('strict-transport-security' in res.headers, `${name}: no HSTS over plain HTTP`)
}

t.test('JSON answers, errors included, carry the OWASP REST set', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const answers: [string, InjectOptions][] = [
    ['health', { url: '/health' }],
    ['list', { url: '/notifications', headers: bearer(tokens.readA) }],
    [
      'create',
      {
        method: 'POST',
        url: '/ward-occupants',
        headers: bearer(tokens.writeA),
        payload: { encounter: 'e', bed: 'b', occupiedBy: 'p' },
      },
    ],
    ['400', { url: '/ward-occupants?colour=red', headers: bearer(tokens.readA) }],
    ['401', { url: '/ward-occupants' }],
    ['404 route', { url: '/nowhere' }],
    ['404 id', { url: '/notifications/0123456789abcdef01234567', headers: bearer(tokens.readA) }],
  ]
  for (const [name, request] of answers) apiSet(t, await app.inject(request), name)
})

t.test('HSTS only when the service knows the request came over TLS', async (t) => {
  const proxied = await buildTestApp(t, { TRUST_PROXY: '127.0.0.1' })
  const https = await proxied.app.inject({ url: '/health', headers: { 'x-forwarded-proto': 'https' } })
  t.match(https.headers['strict-transport-security'], /^max-age=\d+/, 'behind TRUST_PROXY, forwarded https')
  const notProxy = await proxied.app.inject({
    url: '/health',
    headers: { 'x-forwarded-proto': 'https' },
    remoteAddress: '192.0.2.9',
  })
  t.notOk('strict-transport-security' in notProxy.headers, 'from an address that is not a named proxy: not believed')
  const http = await proxied.app.inject({ url: '/health', headers: { 'x-forwarded-proto': 'http' } })
  t.notOk('strict-transport-security' in http.headers, 'forwarded http: none')
  const direct = await buildTestApp(t)
  const forged = await direct.app.inject({ url: '/health', headers: { 'x-forwarded-proto': 'https' } })
  t.notOk('strict-transport-security' in forged.headers, 'without TRUST_PROXY a forwarded protocol is not believed')
})

t.test("the service's own HTML pages keep helmet's full set", async (t) => {
  const { app } = await buildTestApp(t)
  const docs = await app.inject('/docs/')
  t.match(docs.headers['content-type'], /^text\/html/)
  t.match(docs.headers['content-security-policy'], /script-src 'self'/)
  t.match(docs.headers['content-security-policy'], /frame-ancestors 'none'/)
  // Swagger UI's script sets inline styles: its page alone allows them, nothing else differs.
  const board = String((await app.inject('/board')).headers['content-security-policy'])
  t.equal(
    docs.headers['content-security-policy'],
    board.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'"),
    "the docs page: the board's policy plus inline styles",
  )
  for (const header of PAGE_ONLY) t.ok(header in docs.headers, `docs: ${header}`)
  t.equal(docs.headers['x-content-type-options'], 'nosniff')
  t.equal(docs.headers['x-frame-options'], 'DENY')

  // A new page gets them by being HTML, without any wiring of its own.
  const fastify = Fastify()
  t.teardown(() => fastify.close())
  await fastify.register(securityHeaders)
  fastify.get('/board', (_request, reply) => reply.type('text/html; charset=utf-8').send('<p>board</p>'))
  fastify.get('/data', () => ({ ok: true }))
  const newPage = await fastify.inject('/board')
  t.match(newPage.headers['content-security-policy'], /script-src 'self'/, 'a new HTML page: the page policy')
  for (const header of PAGE_ONLY) t.ok(header in newPage.headers, `new page: ${header}`)
  apiSet(t, await fastify.inject('/data'), 'a new JSON route')
})

t.test('a rendered print layout may run no script at all, in a sandbox', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const created = await app.inject({
    method: 'POST',
    url: '/form-templates',
    headers: bearer(tokens.writeA),
    payload: { type: 'sheet', template: 'p hello' },
  })
  const { id } = created.json()
  for (const request of [
    { url: `/form-templates/${id}/render` },
    { method: 'POST' as const, url: `/form-templates/${id}/render`, payload: { data: { x: 1 } } },
  ]) {
    const res = await app.inject({ ...request, headers: bearer(tokens.readA) })
    t.equal(res.statusCode, 200)
    const csp = res.headers['content-security-policy'] as string
    const directives = csp.split(';').map((d) => d.trim())
    t.ok(directives.includes('sandbox'), `sandboxed: ${csp}`)
    t.ok(directives.includes("default-src 'none'"), 'nothing is fetched or run by default')
    t.notOk(/script-src/.test(csp), 'no script source is allowed')
    t.ok(directives.includes("frame-ancestors 'none'"))
    t.equal(res.headers['cache-control'], 'no-store')
    t.equal(res.headers['x-content-type-options'], 'nosniff')
  }
  const missing = await app.inject({
    url: '/form-templates/0123456789abcdef01234567/render',
    headers: bearer(tokens.readA),
  })
  t.equal(missing.statusCode, 404)
  apiSet(t, missing, 'a render that fails answers JSON')
})
