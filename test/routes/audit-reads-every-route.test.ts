import Fastify from 'fastify'
import fp from 'fastify-plugin'
import t, { type Test } from 'tap'
import app, { serverOptions } from '../../app.js'
import { defaultConfig } from '../../config.js'
import { bearer } from '../helper.js'

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
  method: 'GET' | 'HEAD'
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
  })
  const fastify = Fastify(serverOptions(config))
  const routes: Registered[] = []
  fastify.addHook('onRoute', function noteRoute(route) {
    for (const method of [route.method].flat()) {
      if (method === 'GET' || method === 'HEAD') routes.push({ method: method as Registered['method'], url: route.url })
    }
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
  for (const { method, url } of routes) {
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
