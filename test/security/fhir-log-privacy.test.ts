import t from 'tap'
import { bearer } from '../helper.js'
import { appWithLog } from './app-with-log.js'

// A refused FHIR request is logged without what it carried: a client that puts a patient's name
// or number in the wrong parameter, or in a path that is no FHIR interaction, must not leave it in
// the request log, which keeps the parameters' names and never their values (docs/SECURITY.md).

const PATIENT = 'patient-7x7q'
const ENCOUNTER = 'enc-1001z'

t.test('a refused FHIR request leaves no parameter value or stray path in the log', async (t) => {
  const { app, log } = await appWithLog(t, { LOG_LEVEL: 'info' })
  const token = app.tokens.create({ account: 'nurse', role: 'write', facility: 'A', label: 'log' }).token
  const requests = [
    { url: `/fhir/Encounter?date=${PATIENT}`, status: 400 },
    { url: `/fhir/Encounter?_sort=${PATIENT}`, status: 400 },
    { url: `/fhir/Encounter?_include=${PATIENT}`, status: 400 },
    { url: `/fhir/Encounter?_count=${PATIENT}`, status: 400 },
    { url: `/fhir/Encounter?_summary=${PATIENT}`, status: 400 },
    { url: `/fhir/Encounter?_format=${PATIENT}`, status: 406 },
    { url: `/fhir/Patient/${PATIENT}`, status: 404 },
    { url: `/fhir/Encounter/en-A..${ENCOUNTER}`, status: 404 },
    { url: `/fhir/Questionnaire/${PATIENT}`, status: 404 },
    { method: 'POST' as const, url: '/fhir/Questionnaire', payload: { resourceType: PATIENT }, status: 400 },
  ]
  for (const { status, ...r } of requests) {
    const res = await app.inject({ method: 'GET', ...r, headers: bearer(token) })
    t.equal(res.statusCode, status, r.url)
    t.equal(res.json().resourceType, 'OperationOutcome')
  }
  t.match(log(), /FHIR request refused/, 'the refusals are logged')
  t.notMatch(log(), PATIENT, 'no patient in the log')
  t.notMatch(log(), ENCOUNTER, 'no encounter number in the log')
})
