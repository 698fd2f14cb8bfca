import createError from '@fastify/error'
import { Type } from '@sinclair/typebox'
import Fastify from 'fastify'
import t, { type Test } from 'tap'
import { serverOptions } from '../../app.js'
import { defaultConfig } from '../../config.js'
import { fhirConventions } from '../../fhir/index.js'
import { FhirError } from '../../fhir/outcome.js'
import errorsPlugin, { errorBody } from '../../plugins/errors.js'
import { bearer, buildTestApp } from '../helper.js'
import { assertValidFhir } from './validate.js'

/**
 * Every error under /fhir is an OperationOutcome with Content-Type application/fhir+json: the ones
 * the FHIR routes raise, and the ones the rest of the service raises on their way (schema errors,
 * the auth plugin, the rate limit, storage faults, refusals sent as they are).
 */

interface Expected {
  status: number
  code: string
}

function assertOutcome(
  t: Test,
  res: { statusCode: number; headers: Record<string, unknown>; json(): unknown },
  expected: Expected,
) {
  t.equal(res.statusCode, expected.status, `status ${expected.status}`)
  t.match(String(res.headers['content-type']), /^application\/fhir\+json/, 'FHIR JSON')
  const body = res.json() as { resourceType: string; issue: { code: string; diagnostics: string }[] }
  t.equal(body.resourceType, 'OperationOutcome')
  t.equal(body.issue[0]?.code, expected.code, `issue code ${expected.code}`)
  t.ok(body.issue[0]?.diagnostics, 'says why')
  assertValidFhir(t, body, `the ${expected.status}`)
}

t.test('each status a FHIR route or the service may answer becomes its OperationOutcome', async (t) => {
  const app = Fastify(serverOptions(defaultConfig({ DATABASE_PATH: ':memory:' })))
  await app.register(errorsPlugin)
  const CASES: Record<string, Expected & { raise: () => Error }> = {
    conflict: { status: 409, code: 'conflict', raise: () => new (createError('BED_OCCUPIED', 'occupied', 409))() },
    precondition: {
      status: 412,
      code: 'conflict',
      raise: () => new (createError('VERSION_MISMATCH', 'If-Match names version 1, it is 2', 412))(),
    },
    unprocessable: {
      status: 422,
      code: 'processing',
      raise: () => new FhirError(422, 'processing', 'enableWhen', ['Questionnaire.item[0].enableWhen']),
    },
    forbidden: {
      status: 403,
      code: 'forbidden',
      raise: () => new (createError('ROLE_FORBIDDEN', 'needs admin', 403))(),
    },
    scope: {
      status: 403,
      code: 'forbidden',
      raise: () => new FhirError(403, 'forbidden', 'missing scope user/Encounter.rs'),
    },
    gone: { status: 404, code: 'not-found', raise: () => new FhirError(404, 'not-found', 'Encounter/x is not known') },
    busy: {
      status: 503,
      code: 'transient',
      raise: () => Object.assign(new Error('SQLITE_BUSY: database is locked'), { code: 'SQLITE_BUSY' }),
    },
    crash: { status: 500, code: 'exception', raise: () => new Error('internal detail that must not show') },
  }
  await app.register(
    async (scope) => {
      fhirConventions(scope)
      for (const [name, c] of Object.entries(CASES))
        scope.get(`/${name}`, async () => {
          throw c.raise()
        })
      scope.post('/schema', { schema: { body: Type.Object({ a: Type.String() }) } }, async () => ({}))
      // As the auth plugin sends a missing provider key set: a body of the rest of the API, sent as it is.
      scope.get('/sent', async (_request, reply) =>
        reply.code(503).send(errorBody(503, 'no provider keys yet', 'PROVIDER_KEYS_UNAVAILABLE')),
      )
    },
    { prefix: '/fhir' },
  )
  await app.ready()
  t.teardown(() => app.close())
  for (const [name, c] of Object.entries(CASES)) {
    const res = await app.inject({ url: `/fhir/${name}` })
    assertOutcome(t, res, c)
    if (name === 'crash') t.notMatch(res.body, /internal detail/, 'a 500 shows no internals')
    if (name === 'unprocessable')
      t.same(res.json().issue[0].expression, ['Questionnaire.item[0].enableWhen'], 'the path named')
  }
  assertOutcome(
    t,
    await app.inject({
      method: 'POST',
      url: '/fhir/schema',
      headers: { 'content-type': 'application/fhir+json' },
      payload: '{"b":1}',
    }),
    { status: 400, code: 'invalid' },
  )
  assertOutcome(
    t,
    await app.inject({
      method: 'POST',
      url: '/fhir/schema',
      headers: { 'content-type': 'application/fhir+json' },
      payload: '{"a":',
    }),
    { status: 400, code: 'invalid' },
  )
  t.equal(
    (
      await app.inject({
        method: 'POST',
        url: '/fhir/schema',
        headers: { 'content-type': 'application/fhir+json' },
        payload: '{"a":"x"}',
      })
    ).statusCode,
    200,
    'a FHIR JSON body is read',
  )
  assertOutcome(t, await app.inject({ url: '/fhir/sent' }), { status: 503, code: 'transient' })
})

t.test('the endpoint: 401, 404, 406, 400 and 429 as OperationOutcomes', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const noToken = await app.inject({ url: '/fhir/Encounter' })
  assertOutcome(t, noToken, { status: 401, code: 'login' })
  t.match(noToken.headers['www-authenticate'], /^Bearer/)
  assertOutcome(t, await app.inject({ url: '/fhir/Encounter', headers: bearer('fs_not-a-token') }), {
    status: 401,
    code: 'login',
  })
  assertOutcome(t, await app.inject({ url: '/fhir/Patient', headers: bearer(tokens.read) }), {
    status: 404,
    code: 'not-found',
  })
  assertOutcome(t, await app.inject({ url: '/fhir/Encounter/en-A..nope', headers: bearer(tokens.read) }), {
    status: 404,
    code: 'not-found',
  })
  const xml = await app.inject({
    url: '/fhir/Location',
    headers: { ...bearer(tokens.readA), accept: 'application/fhir+xml' },
  })
  assertOutcome(t, xml, { status: 406, code: 'not-supported' })
  assertOutcome(t, await app.inject({ url: '/fhir/metadata?_format=xml' }), { status: 406, code: 'not-supported' })
  assertOutcome(t, await app.inject({ url: '/fhir/metadata', headers: { accept: 'text/html' } }), {
    status: 406,
    code: 'not-supported',
  })
  t.equal(
    (await app.inject({ url: '/fhir/metadata', headers: { accept: 'application/fhir+json;q=0.9, */*;q=0.1' } }))
      .statusCode,
    200,
  )
  t.equal(
    (await app.inject({ url: '/fhir/metadata?_format=json', headers: { accept: 'text/html' } })).statusCode,
    200,
    '_format wins',
  )
  const limited = bearer(tokens.write)
  const strict = { ...limited, prefer: 'handling=strict' }
  const bad = await app.inject({ url: '/fhir/Encounter?colour=red', headers: strict })
  assertOutcome(t, bad, { status: 400, code: 'not-supported' })
  t.same(bad.json().issue[0].expression, ['colour'])
  assertOutcome(t, await app.inject({ url: '/fhir/Encounter?_count=many', headers: limited }), {
    status: 400,
    code: 'invalid',
  })
  t.equal(
    (await app.inject({ url: '/fhir/Encounter?colour=red', headers: limited })).statusCode,
    200,
    'without strict: ignored',
  )
})

t.test('a rate-limited FHIR request is a 429 OperationOutcome', async (t) => {
  const { app, tokens } = await buildTestApp(t, { RATE_LIMIT_MAX: 1, RATE_LIMIT_WINDOW_MS: 60_000 })
  t.equal((await app.inject({ url: '/fhir/Location', headers: bearer(tokens.read) })).statusCode, 200)
  const throttled = await app.inject({ url: '/fhir/Location', headers: bearer(tokens.read) })
  assertOutcome(t, throttled, { status: 429, code: 'throttled' })
  t.ok(throttled.headers['retry-after'], 'with Retry-After')
})
