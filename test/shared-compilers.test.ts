import Fastify, { type FastifyServerOptions } from 'fastify'
import t, { type Test } from 'tap'
import { buildApp, serverOptions } from '../app.js'
import { defaultConfig } from '../config.js'
import { bearer, buildTestApp } from './helper.js'
import { compilations, sharedCompilers } from './shared-compilers.js'

// The compilers buildTestApp shares between the apps of a process (test/shared-compilers.ts): a
// second app compiles nothing, and apps whose schemas or options differ never get another's.

const count = () => ({ ...compilations })

/** A bare Fastify with one route, built with the shared compilers or with Fastify's own. */
async function server(t: Test, shared: boolean, options: FastifyServerOptions, schema: object, addSchema?: object) {
  const app = Fastify({ ...options, ...(shared ? sharedCompilers : {}) })
  if (addSchema) app.addSchema(addSchema)
  app.post('/x', { schema }, async (request) => request.body ?? { n: 1.5, extra: 'dropped' })
  await app.ready()
  t.teardown(() => app.close())
  return app
}

t.test('a second app with another config compiles nothing, and validates and serializes as the first', async (t) => {
  const first = await buildTestApp(t)
  const after = count()
  t.ok(after.validators > 0 && after.serializers > 0, 'this process has compiled the routes once')
  const second = await buildTestApp(t, { BED_POLICY: 'shared', AUDIT_READS: true, BODY_LIMIT: 2048 })
  const now = count()
  t.equal(now.validators, after.validators, 'no validator compiled again')
  t.equal(now.serializers, after.serializers, 'no serializer compiled again')
  t.ok(now.validatorHits > after.validatorHits && now.serializerHits > after.serializerHits, 'the cache was hit')

  const admit = { encounter: 'enc-1', bed: 'B-1', occupiedBy: 'patient-1' }
  const answers = []
  for (const { app, tokens } of [first, second]) {
    const post = (payload: object, headers: Record<string, string> = {}) =>
      app.inject({ method: 'POST', url: '/ward-occupants', headers: { ...bearer(tokens.writeA), ...headers }, payload })
    const bad = await post({ ...admit, extra: 1 })
    t.equal(bad.statusCode, 400, 'an unknown property is refused')
    t.match(bad.json(), { statusCode: 400, code: 'FST_ERR_VALIDATION' })
    t.equal((await post(admit, { 'Idempotency-Key': 'not a key!' })).statusCode, 400, 'and a malformed key header')
    const admitted = await post(admit)
    t.equal(admitted.statusCode, 200)
    t.same(
      Object.keys(admitted.json()).sort(),
      ['createdAt', 'createdBy', 'encounter', 'bed', 'facility', 'id', 'occupiedAt', 'occupiedBy'].sort(),
      'serialized by the response schema',
    )
    answers.push((await post({ ...admit, encounter: 'enc-2', occupiedBy: 'patient-2' })).statusCode)
  }
  t.same(answers, [409, 200], 'the same bed twice: refused under the exclusive policy, taken under the shared one')
  const tooBig = await second.app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(second.tokens.writeA),
    payload: { ...admit, encounter: 'x'.repeat(4000) },
  })
  t.equal(tooBig.statusCode, 413, "the second app's own body limit")
})

t.test('production builds compile as Fastify does, without the shared compilers', async (t) => {
  const before = count()
  const app = await buildApp(defaultConfig({ DATABASE_PATH: ':memory:', LOG_LEVEL: 'silent' }))
  t.teardown(() => app.close())
  t.same(count(), before, 'buildApp alone neither reads nor fills the cache')
})

t.test('a schema that differs (a limit from a config) is compiled for its own app', async (t) => {
  const body = (max: number) => ({ type: 'object', properties: { name: { type: 'string', maxLength: max } } })
  const two = await server(t, true, {}, { body: body(2) })
  const five = await server(t, true, {}, { body: body(5) })
  const payload = { name: 'abcd' }
  t.equal((await two.inject({ method: 'POST', url: '/x', payload })).statusCode, 400, 'longer than 2')
  t.equal((await five.inject({ method: 'POST', url: '/x', payload })).statusCode, 200, 'within 5')
  const before = count()
  const again = await server(t, true, {}, { body: body(2) })
  t.equal(count().validators, before.validators, 'the same schema again is not compiled again')
  t.equal((await again.inject({ method: 'POST', url: '/x', payload })).statusCode, 400)
})

t.test('ajv options are per app: coercion on in one, off in the other', async (t) => {
  const schema = { querystring: { type: 'object', properties: { n: { type: 'integer' } } } }
  const coercing = await server(t, true, {}, schema)
  const strict = await server(t, true, serverOptions(defaultConfig({})), schema)
  t.equal((await coercing.inject({ method: 'POST', url: '/x?n=3' })).statusCode, 200, "Fastify's default coerces")
  t.equal((await strict.inject({ method: 'POST', url: '/x?n=3' })).statusCode, 400, "the service's options do not")
})

t.test('an ajv plugin (a format) of one app is not another app', async (t) => {
  type AjvPlugin = NonNullable<NonNullable<FastifyServerOptions['ajv']>['plugins']>[number]
  const format = (pattern: RegExp) =>
    ((ajv: { addFormat: (name: string, re: RegExp) => unknown }) =>
      ajv.addFormat('ward', pattern)) as unknown as AjvPlugin
  const schema = { body: { type: 'object', properties: { ward: { type: 'string', format: 'ward' } } } }
  const w = await server(t, true, { ajv: { plugins: [format(/^W/)] } }, schema)
  const x = await server(t, true, { ajv: { plugins: [format(/^X/)] } }, schema)
  const payload = { ward: 'W1' }
  t.equal((await w.inject({ method: 'POST', url: '/x', payload })).statusCode, 200)
  t.equal((await x.inject({ method: 'POST', url: '/x', payload })).statusCode, 400)
})

t.test('a shared schema (addSchema) of the same $id but other content is per app', async (t) => {
  const shared = (max: number) => ({ $id: 'Name', type: 'string', maxLength: max })
  const schema = { body: { type: 'object', properties: { name: { $ref: 'Name#' } } } }
  const two = await server(t, true, {}, schema, shared(2))
  const five = await server(t, true, {}, schema, shared(5))
  const payload = { name: 'abcd' }
  t.equal((await two.inject({ method: 'POST', url: '/x', payload })).statusCode, 400)
  t.equal((await five.inject({ method: 'POST', url: '/x', payload })).statusCode, 200)
})

t.test('serializer options are per app', async (t) => {
  const schema = {
    response: { 200: { type: 'object', properties: { n: { type: 'integer' } }, additionalProperties: false } },
  }
  const trunc = await server(t, true, {}, schema)
  const ceil = await server(t, true, { serializerOpts: { rounding: 'ceil' } }, schema)
  t.equal((await trunc.inject({ method: 'POST', url: '/x' })).body, '{"n":1}', 'the extra field dropped, 1.5 cut')
  t.equal((await ceil.inject({ method: 'POST', url: '/x' })).body, '{"n":2}', 'rounded up')
})

t.test('a headers schema has its names lowercased, as by Fastify without the shared compilers', async (t) => {
  const schema = {
    headers: { type: 'object', properties: { 'X-Ward': { type: 'string', pattern: '^W' } }, required: ['X-Ward'] },
  }
  for (const shared of [false, true]) {
    const app = await server(t, shared, {}, schema)
    const answers = await Promise.all(
      [{ 'x-ward': 'W1' }, { 'X-Ward': 'W1' }, { 'x-ward': 'X1' }, {}].map(
        async (headers) => (await app.inject({ method: 'POST', url: '/x', headers })).statusCode,
      ),
    )
    t.same(answers, [200, 200, 400, 400], shared ? 'shared compilers' : "Fastify's own")
  }
})
