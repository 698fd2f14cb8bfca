import t from 'tap'
import { bearer, buildTestApp } from '../helper.js'
import { admit, fhirGet } from './ward.js'

/**
 * Search parameters a client may get wrong: each is a 400 OperationOutcome naming it, never a
 * 200 that quietly did something else.
 */

t.test('a search refuses what it does not do, with or without Prefer: handling=strict', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  await admit(app, tokens.writeA, { bed: 'X-1', room: 'R1', encounter: 'V1', occupiedBy: 'p1' })
  // Each search declares its _include, _revinclude and _sort (docs/FHIR.md): any other is a 400.
  const refused: [string, string][] = [
    ['/fhir/Location?_sort=name', '_sort'],
    ['/fhir/Location?_sort=-_id', '_sort'],
    ['/fhir/Location?_include=Encounter:location', '_include'],
    ['/fhir/Encounter?_revinclude=Encounter:location', '_revinclude'],
    ['/fhir/Questionnaire?_include=Questionnaire:derivedFrom', '_include'],
    ['/fhir/Questionnaire?_revinclude=Questionnaire:derivedFrom', '_revinclude'],
    ['/fhir/Encounter?_sort=name', '_sort'],
  ]
  for (const [url, param] of refused)
    for (const headers of [{}, { prefer: 'handling=strict' }] as Record<string, string>[]) {
      const res = await fhirGet(app, tokens.readA, url, headers)
      t.equal(res.status, 400, `${url} ${JSON.stringify(headers)}`)
      t.match(res.body, { resourceType: 'OperationOutcome', issue: [{ expression: [param] }] })
    }
  // What is declared still works.
  t.equal((await fhirGet(app, tokens.readA, '/fhir/Location?_revinclude=Encounter:location')).status, 200)
  t.equal((await fhirGet(app, tokens.readA, '/fhir/Encounter?_include=Encounter:location&_sort=-date')).status, 200)
  t.equal((await fhirGet(app, tokens.readA, '/fhir/Questionnaire?_sort=-date')).status, 200)
})

t.test('a date that is no calendar date is a 400, never read as another one', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  for (const value of [
    '2024-13-01',
    '2024-00-10',
    '2024-02-30',
    '2023-02-29',
    '2024-05-00',
    '2024-05-01T24:00',
    '2024-05-01T10:60',
    '2024-05-01T10:00:60',
    '2024-05-01T10:00+15:00',
    '2024-05-01T10:00+02:60',
    // refused even with no Encounter or Questionnaire to compare it with (as here)
    'not-a-date',
  ])
    for (const url of [
      `/fhir/Encounter?date=ge${encodeURIComponent(value)}`,
      `/fhir/Encounter?_lastUpdated=${encodeURIComponent(value)}`,
      `/fhir/Questionnaire?_lastUpdated=lt${encodeURIComponent(value)}`,
    ]) {
      const res = await fhirGet(app, tokens.readA, url)
      t.equal(res.status, 400, url)
      t.match(res.body, { resourceType: 'OperationOutcome', issue: [{ code: 'invalid' }] })
    }
  for (const value of ['2024-02-29', '2024-05-01T23:59:59.999Z', '2024-05-01T10:00+14:00', '1970', '2024-12', '0024'])
    t.equal((await fhirGet(app, tokens.readA, `/fhir/Encounter?date=${encodeURIComponent(value)}`)).status, 200, value)
})

t.test('_format given twice is a 400, not the first or the last one', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  for (const url of [
    '/fhir/Encounter?_format=json&_format=xml',
    '/fhir/Encounter?_format=xml&_format=json',
    '/fhir/Location/wa-A?_format=json&_format=json',
    '/fhir/metadata?_format=json&_format=xml',
  ]) {
    const res = await fhirGet(app, tokens.readA, url)
    t.equal(res.status, 400, url)
    t.match(res.body, { resourceType: 'OperationOutcome', issue: [{ expression: ['_format'] }] })
  }
})

t.test('a path the router refuses under /fhir is an OperationOutcome too', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  for (const [url, status] of [
    [`/fhir/Encounter/${'a'.repeat(5000)}`, 414],
    [`/fhir/Location/${'%C3%A9'.repeat(2000)}`, 414],
    ['/fhir/Questionnaire/%F0', 400],
    ['/fhir/Encounter/%E0%A4%A', 400],
  ] as const) {
    const res = await app.inject({ url, headers: bearer(tokens.readA) })
    t.equal(res.statusCode, status, url.slice(0, 40))
    t.match(res.headers['content-type'], /^application\/fhir\+json/)
    t.match(res.json(), { resourceType: 'OperationOutcome', issue: [{ severity: 'error', code: 'invalid' }] })
  }
  // The rest of the API keeps its own error shape.
  const rest = await app.inject({ url: '/ward-occupants/%F0', headers: bearer(tokens.readA) })
  t.equal(rest.statusCode, 400)
  t.match(rest.json(), { statusCode: 400, code: 'FST_ERR_BAD_URL' })
})
