import Fastify from 'fastify'
import fp from 'fastify-plugin'
import t from 'tap'
import app, { serverOptions } from '../../app.js'
import { defaultConfig } from '../../config.js'
import { bearer } from '../helper.js'
import { assertValidFhir } from './validate.js'

/**
 * GET /fhir/metadata lists exactly what the endpoint has: each resource type with the
 * interactions its routes make, and each search parameter, include and revinclude it lists is
 * taken by the search under `Prefer: handling=strict` (which refuses any other).
 */

const INSTANCE = /^\/fhir\/([A-Z][A-Za-z]+)\/:id$/
const TYPE = /^\/fhir\/([A-Z][A-Za-z]+)$/

interface Statement {
  resourceType: string
  fhirVersion: string
  format: string[]
  rest: {
    mode: string
    security: { service: { coding: { code: string }[] }[] }
    resource: {
      type: string
      interaction: { code: string }[]
      searchParam?: { name: string; type: string }[]
      searchInclude?: string[]
      searchRevInclude?: string[]
    }[]
  }[]
}

t.test('the CapabilityStatement matches the routes', async (t) => {
  const config = defaultConfig({ DATABASE_PATH: ':memory:', LOG_LEVEL: 'silent', RATE_LIMIT_MAX: 0 })
  const fastify = Fastify(serverOptions(config))
  const routes: string[] = []
  fastify.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      const instance = INSTANCE.exec(route.url)
      const type = TYPE.exec(route.url)
      if (instance && method === 'GET') routes.push(`${instance[1]} read`)
      if (instance && method === 'PUT') routes.push(`${instance[1]} update`)
      if (instance && method === 'DELETE') routes.push(`${instance[1]} delete`)
      if (type && method === 'GET') routes.push(`${type[1]} search-type`)
      if (type && method === 'POST') routes.push(`${type[1]} create`)
    }
  })
  await fastify.register(fp(app), { config })
  await fastify.ready()
  t.teardown(() => fastify.close())
  const token = fastify.tokens.create({ account: 'reader', role: 'read', facility: null, label: null }).token

  const res = await fastify.inject({ url: '/fhir/metadata' })
  t.equal(res.statusCode, 200, 'anonymous')
  t.match(res.headers['content-type'], /^application\/fhir\+json/)
  const statement = res.json() as Statement
  assertValidFhir(t, statement)
  t.equal(statement.fhirVersion, '4.0.1')
  t.ok(statement.format.includes('json'))
  const [rest] = statement.rest
  t.equal(rest?.mode, 'server')
  t.same(rest?.security.service[0]?.coding[0]?.code, 'SMART-on-FHIR')

  const listed = (rest?.resource ?? []).flatMap((r) => r.interaction.map((i) => `${r.type} ${i.code}`))
  t.same([...listed].sort(), [...new Set(routes)].sort(), 'the interactions are exactly the routes')
  t.same(
    (rest?.resource ?? []).map((r) => r.type),
    ['Encounter', 'Location', 'Questionnaire'],
  )
  const questionnaire = rest?.resource.find((r) => r.type === 'Questionnaire')
  t.same(questionnaire?.interaction.map((i) => i.code).sort(), ['create', 'read', 'search-type', 'update'])
  for (const name of ['_id', 'name', 'title', 'status', 'url', 'version'])
    t.ok(
      questionnaire?.searchParam?.some((p) => p.name === name),
      `Questionnaire searches by ${name}`,
    )

  const strict = { ...bearer(token), prefer: 'handling=strict' }
  for (const resource of rest?.resource ?? []) {
    const search = async (query: string) => fastify.inject({ url: `/fhir/${resource.type}?${query}`, headers: strict })
    const refused = await search('colour=red')
    t.equal(refused.statusCode, 400, `${resource.type}: strict handling refuses what is not listed`)
    for (const param of resource.searchParam ?? []) {
      const value = param.type === 'date' ? 'ge2024-01-01' : 'x'
      let answer = await search(`${param.name}=${value}`)
      // A parameter searched only with a modifier (subject:identifier) says so in a 400 of its own.
      if (answer.statusCode === 400 && answer.json().issue[0].diagnostics.includes(':identifier'))
        answer = await search(`${param.name}:identifier=${value}`)
      t.equal(answer.statusCode, 200, `${resource.type}?${param.name} is taken (${answer.body.slice(0, 200)})`)
    }
    for (const include of resource.searchInclude ?? [])
      t.equal((await search(`_include=${include}`)).statusCode, 200, `${resource.type} _include=${include}`)
    for (const include of resource.searchRevInclude ?? [])
      t.equal((await search(`_revinclude=${include}`)).statusCode, 200, `${resource.type} _revinclude=${include}`)
  }
})
