import { readFileSync } from 'node:fs'
import { test } from 'tap'
import { bearer, buildTestApp, type TestApp } from '../helper.js'
import { assertValidFhir } from './validate.js'

const sample = (name: string) => JSON.parse(readFileSync(new URL(`samples/${name}`, import.meta.url), 'utf8'))
const FHIR = { 'content-type': 'application/fhir+json' }

function post(app: TestApp, token: string, resource: object) {
  return app.inject({
    method: 'POST',
    url: '/fhir/Questionnaire',
    headers: { ...bearer(token), ...FHIR },
    payload: resource,
  })
}
function put(app: TestApp, token: string, id: string, resource: object, ifMatch?: string) {
  const headers = { ...bearer(token), ...FHIR, ...(ifMatch === undefined ? {} : { 'if-match': ifMatch }) }
  return app.inject({ method: 'PUT', url: `/fhir/Questionnaire/${id}`, headers, payload: resource })
}
function get(app: TestApp, token: string, url: string, headers: Record<string, string> = {}) {
  return app.inject({ url, headers: { ...bearer(token), ...headers } })
}

const painForm = {
  type: 'intake',
  name: 'Pain check',
  template: 'h1= name',
  tags: ['vitals'],
  meta: { app: 'kept' },
  config: { engine: 'pug' },
  items: [
    { id: 'pain', question: 'Pain?', type: 'trueorfalse', required: true },
    { id: 'where', question: 'Where?', type: 'checklist', choices: ['head', 'back'], set: 'Details' },
  ],
}

test('a public Questionnaire (FHIR R4 f201) is created as a form template: 201, Location, ETag, audited', async (t) => {
  const { app, tokens } = await buildTestApp(t, { FHIR_CANONICAL_BASE: 'https://ward.example/fhir' })
  const created = await post(app, tokens.writeA, sample('f201-lifelines.json'))
  t.equal(created.statusCode, 201, created.body)
  t.match(created.headers['content-type'], /^application\/fhir\+json/)
  const q = created.json()
  assertValidFhir(t, q, 'the created Questionnaire')
  t.equal(created.headers.etag, 'W/"1"')
  t.match(created.headers.location, new RegExp(`/fhir/Questionnaire/${q.id}/_history/1$`))
  t.match(q, {
    url: `https://ward.example/fhir/Questionnaire/${q.id}`,
    status: 'active',
    date: '2010-01-01T00:00:00.000Z',
  })
  t.not(q.id, 'f201', 'the server names the template')

  const rest = await get(app, tokens.readA, `/form-templates/${q.id}`)
  t.match(rest.json(), {
    facility: 'A',
    createdBy: 'nurse-a',
    type: 'questionnaire',
    items: [
      { id: '1', type: 'trueorfalse' },
      { id: '2.1', type: 'identification', set: 'General questions' },
    ],
  })
  const audit = await get(app, tokens.admin, `/audit?resource=form-templates&recordId=${q.id}`)
  t.match(audit.json(), { entries: [{ operation: 'create', account: 'nurse-a' }] })
})

test('Questionnaires with parts a template cannot hold are a 422 naming each path; nothing is stored', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  for (const [file, paths] of [
    [
      'sdc-phq9.json',
      [
        'Questionnaire.contained',
        'Questionnaire.item[0].item[0].answerValueSet',
        'Questionnaire.item[0].item[9].extension[0]',
      ],
    ],
    ['lforms-phq9.json', ['Questionnaire.status', 'Questionnaire.item[0].answerOption[0].valueCoding']],
  ] as const) {
    const refused = await post(app, tokens.write, sample(file))
    t.equal(refused.statusCode, 422, file)
    const outcome = refused.json()
    assertValidFhir(t, outcome, `the refusal of ${file}`)
    const expressions = outcome.issue.flatMap((issue: { expression: string[] }) => issue.expression)
    for (const path of paths) t.ok(expressions.includes(path), `${file}: ${path}`)
  }
  const list = await get(app, tokens.read, '/form-templates')
  t.equal(list.json().total, 0)
  const retired = await post(app, tokens.write, { resourceType: 'Questionnaire', status: 'retired' })
  t.equal(retired.statusCode, 422)
  t.match(retired.json(), { issue: [{ expression: ['Questionnaire.status'] }] })
  const notJson = await app.inject({
    method: 'POST',
    url: '/fhir/Questionnaire',
    headers: { ...bearer(tokens.write), ...FHIR },
    payload: '{"resourceType":',
  })
  t.equal(notJson.statusCode, 400)
  t.equal(notJson.json().resourceType, 'OperationOutcome')
  for (const body of [{ resourceType: 'Patient' }, [], { status: 'active' }]) {
    const wrong = await post(app, tokens.write, body)
    t.equal(wrong.statusCode, 400, JSON.stringify(body))
    assertValidFhir(t, wrong.json(), 'the 400 of a body that is no Questionnaire')
  }
})

test('read: the template as a Questionnaire with its ETag; If-None-Match gives 304; unknown ids 404', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const made = await app.inject({
    method: 'POST',
    url: '/form-templates',
    headers: bearer(tokens.write),
    payload: painForm,
  })
  const id = made.json().id
  const read = await get(app, tokens.read, `/fhir/Questionnaire/${id}`)
  t.equal(read.statusCode, 200)
  t.equal(read.headers.etag, 'W/"1"')
  const q = read.json()
  assertValidFhir(t, q, 'a read Questionnaire')
  t.match(q, {
    id,
    meta: { versionId: '1' },
    name: 'PainCheck',
    title: 'Pain check',
    item: [
      { linkId: 'pain', type: 'boolean', required: true },
      { linkId: 'set:Details', type: 'group', item: [{ linkId: 'where', type: 'choice', repeats: true }] },
    ],
  })
  const again = await get(app, tokens.read, `/fhir/Questionnaire/${id}`, { 'if-none-match': 'W/"1"' })
  t.equal(again.statusCode, 304)
  t.equal(again.body, '')
  const missing = await get(app, tokens.read, '/fhir/Questionnaire/ffffffffffffffffffffffff')
  t.equal(missing.statusCode, 404)
  assertValidFhir(t, missing.json(), 'the 404')
})

test('update: If-Match checked (412 when stale), no If-Match proceeds, id must match, what the Questionnaire does not carry stays', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const id = (
    await app.inject({ method: 'POST', url: '/form-templates', headers: bearer(tokens.write), payload: painForm })
  ).json().id
  const exported = (await get(app, tokens.read, `/fhir/Questionnaire/${id}`)).json()

  const unchanged = await put(app, tokens.write, id, exported, 'W/"1"')
  t.equal(unchanged.statusCode, 200)
  t.equal(unchanged.headers.etag, 'W/"1"', 'an unchanged export makes no new version')
  t.same(unchanged.json(), exported, 'export -> import -> export is stable over HTTP')

  const retitled = { ...exported, title: 'Pain check (2)', status: 'retired' }
  const updated = await put(app, tokens.write, id, retitled, 'W/"1"')
  t.equal(updated.statusCode, 200, updated.body)
  t.equal(updated.headers.etag, 'W/"2"')
  assertValidFhir(t, updated.json(), 'the updated Questionnaire')
  t.match(updated.json(), { title: 'Pain check (2)', status: 'retired', meta: { versionId: '2' } })

  const stale = await put(app, tokens.write, id, { ...retitled, title: 'Late' }, 'W/"1"')
  t.equal(stale.statusCode, 412)
  t.equal(stale.json().resourceType, 'OperationOutcome')

  const blind = await put(app, tokens.write, id, { ...retitled, title: 'No If-Match' })
  t.equal(blind.statusCode, 200, 'without If-Match the update proceeds, as a REST patch does')
  t.equal(blind.headers.etag, 'W/"3"')

  const rest = (await get(app, tokens.read, `/form-templates/${id}`)).json()
  t.match(rest, {
    name: 'No If-Match',
    template: 'h1= name',
    tags: ['vitals'],
    meta: { app: 'kept' },
    config: { engine: 'pug' },
  })
  t.ok(rest.hiddenAt, 'retired is hidden')

  const wrongId = await put(app, tokens.write, id, { ...retitled, id: 'other' })
  t.equal(wrongId.statusCode, 400)
  const absent = await put(app, tokens.write, 'ffffffffffffffffffffffff', {
    ...retitled,
    id: 'ffffffffffffffffffffffff',
  })
  t.equal(absent.statusCode, 404)
  const refused = await put(app, tokens.write, id, { ...retitled, item: [{ linkId: 'x', type: 'display' }] })
  t.equal(refused.statusCode, 422)
  t.match(refused.json(), { issue: [{ expression: ['Questionnaire.item[0].type'] }] })
  const readOnly = await put(app, tokens.read, id, retitled)
  t.equal(readOnly.statusCode, 403)
  t.equal(readOnly.json().resourceType, 'OperationOutcome')
  const audit = (await get(app, tokens.admin, `/audit?resource=form-templates&recordId=${id}`)).json()
  t.same(
    audit.entries.map((entry: { operation: string }) => entry.operation),
    ['create', 'patch', 'patch'],
  )
})

test('a PUT without our extensions keeps the type and subtype; an Idempotency-Key retry of a POST creates once', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const made = await app.inject({
    method: 'POST',
    url: '/form-templates',
    headers: bearer(tokens.write),
    payload: { ...painForm, subtype: 'adult' },
  })
  const id = made.json().id
  const generic = { resourceType: 'Questionnaire', id, status: 'active', title: 'From a form builder' }
  const updated = await put(app, tokens.write, id, generic)
  t.equal(updated.statusCode, 200, updated.body)
  const rest = (await get(app, tokens.read, `/form-templates/${id}`)).json()
  t.match(rest, { type: 'intake', subtype: 'adult', name: 'From a form builder' })
  t.notOk(rest.items, 'the items are what the Questionnaire says: none')

  const headers = { ...bearer(tokens.write), ...FHIR, 'idempotency-key': 'import-1' }
  const payload = sample('f201-lifelines.json')
  const first = await app.inject({ method: 'POST', url: '/fhir/Questionnaire', headers, payload })
  const again = await app.inject({ method: 'POST', url: '/fhir/Questionnaire', headers, payload })
  t.equal(first.statusCode, 201)
  t.equal(again.statusCode, 201, 'the retry gets the first answer, its status too')
  t.equal(again.headers['idempotent-replayed'], 'true')
  t.equal(again.json().id, first.json().id)
  t.equal(again.headers.etag, first.headers.etag)
  t.ok(first.headers.location, 'the create names its resource')
  t.equal(again.headers.location, first.headers.location)
  t.equal(again.headers['last-modified'], first.headers['last-modified'])
  t.match(again.headers['content-type'], /^application\/fhir\+json/)
  const list = (await get(app, tokens.read, '/form-templates?type=questionnaire')).json()
  t.equal(list.total, 1, 'one template made')
})

test('the CapabilityStatement lists exactly the Questionnaire interactions and search parameters there are', async (t) => {
  const { app } = await buildTestApp(t)
  const statement = (await app.inject({ url: '/fhir/metadata' })).json()
  assertValidFhir(t, statement, 'the CapabilityStatement')
  const questionnaire = statement.rest[0].resource.find((r: { type: string }) => r.type === 'Questionnaire')
  t.same(
    questionnaire.interaction.map((i: { code: string }) => i.code),
    ['read', 'update', 'create', 'search-type'],
  )
  t.same(
    questionnaire.searchParam.map((p: { name: string }) => p.name),
    ['_id', '_lastUpdated', 'name', 'title', 'status', 'url', 'version'],
  )
})
