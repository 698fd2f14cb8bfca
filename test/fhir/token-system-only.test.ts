import t from 'tap'
import { buildTestApp } from '../helper.js'
import { admit, fhirGet, ids } from './ward.js'

// `system|` (a system, no code) is every code of that system (search.html#token; fhir/search.ts
// tokenMatches): a search starting from the encounter numbers or patients it names started from
// the number or the account '' instead, and found nothing. It names no number: it narrows nothing.

t.test('identifier=system| and subject:identifier=system| find every encounter of the system', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  await admit(app, tokens.writeA, { bed: 'A-1', encounter: 'V1', occupiedBy: 'p1' })
  await admit(app, tokens.writeA, { bed: 'A-2', encounter: 'V2', occupiedBy: 'p2' })
  const everyOne = ['Encounter/en-A..V1', 'Encounter/en-A..V2']
  for (const url of [
    '/fhir/Encounter?identifier=urn:facility-service:encounter|',
    '/fhir/Encounter?subject:identifier=urn:facility-service:patient|',
    '/fhir/Encounter?patient:identifier=urn:facility-service:patient|',
    '/fhir/Encounter?_id=en-A..V1,en-A..V2&identifier=urn:facility-service:encounter|',
  ]) {
    const res = await fhirGet(app, tokens.readA, url)
    t.equal(res.status, 200, url)
    t.same(ids(res.body).sort(), everyOne, url)
  }
  const other = await fhirGet(app, tokens.readA, '/fhir/Encounter?identifier=urn:other|')
  t.same(ids(other.body), [], 'another system: none')
})
