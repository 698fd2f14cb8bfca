import { test } from 'tap'
import { bearer, buildOidcApp, personToken, startTestProvider } from '../oidc/setup.js'

// The identity provider's tokens on /fhir/Questionnaire: each SMART scope grants what it says on
// top of the role, and what it does not grant is a 403 naming the scope missing.

test('SMART scopes limit what a provider token does with Questionnaires', async (t) => {
  const provider = await startTestProvider(t)
  const { app, admin } = await buildOidcApp(t, provider)
  const made = await app.inject({
    method: 'POST',
    url: '/form-templates',
    headers: bearer(admin),
    payload: { type: 'intake', name: 'Pain', facility: 'A' },
  })
  const id = made.json().id
  const nurse = (scope: string) => personToken(provider, 'ann', ['ward-nurse'], 'A', { scope })
  const fhir = async (token: string, method: 'GET' | 'POST' | 'PUT', url: string, payload?: object) =>
    app.inject({
      method,
      url: `/fhir/${url}`,
      headers: { ...bearer(token), 'content-type': 'application/fhir+json' },
      ...(payload === undefined ? {} : { payload }),
    })
  const body = { resourceType: 'Questionnaire', status: 'active', title: 'Pain' }

  const reader = await nurse('user/Questionnaire.rs')
  t.equal((await fhir(reader, 'GET', `Questionnaire/${id}`)).statusCode, 200)
  t.equal((await fhir(reader, 'GET', 'Questionnaire')).statusCode, 200)
  const noCreate = await fhir(reader, 'POST', 'Questionnaire', body)
  t.equal(noCreate.statusCode, 403)
  t.match(noCreate.json(), {
    resourceType: 'OperationOutcome',
    issue: [{ code: 'forbidden', diagnostics: /user\/Questionnaire\.c/ }],
  })
  const noUpdate = await fhir(reader, 'PUT', `Questionnaire/${id}`, { ...body, id })
  t.equal(noUpdate.statusCode, 403)
  t.match(noUpdate.json(), { issue: [{ diagnostics: /user\/Questionnaire\.u/ }] })

  const other = await nurse('user/Location.rs')
  const refused = await fhir(other, 'GET', `Questionnaire/${id}`)
  t.equal(refused.statusCode, 403)
  t.match(refused.json(), { issue: [{ diagnostics: /user\/Questionnaire\.r/ }] })
  t.equal((await fhir(other, 'GET', 'Questionnaire')).statusCode, 403)

  const writer = await nurse('user/Questionnaire.cruds')
  const created = await fhir(writer, 'POST', 'Questionnaire', body)
  t.equal(created.statusCode, 201, created.body)
  const updated = await fhir(writer, 'PUT', `Questionnaire/${id}`, { ...body, id, title: 'Pain (2)' })
  t.equal(updated.statusCode, 200, updated.body)

  const viewer = await personToken(provider, 'vic', ['ward-viewer'], 'A', { scope: 'user/Questionnaire.cruds' })
  t.equal((await fhir(viewer, 'POST', 'Questionnaire', body)).statusCode, 403, 'a scope never lifts the role')
})
