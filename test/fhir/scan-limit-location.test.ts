import t, { type Test } from 'tap'
import { buildTestApp } from '../helper.js'
import { fhirGet, fiveStaysOfA, ids } from './ward.js'

// location narrows a search to the beds' stays, but a bed's history grows with the ward's as the
// whole ward's does: naming every bed (or one bed with years of stays) read every stay again, past
// FHIR_MAX_SCAN_STAYS, with no refusal. No Encounter search may read more stays than the setting.

const LIMIT = 4

async function longWard(t: Test) {
  const built = await buildTestApp(t, { FHIR_MAX_SCAN_STAYS: LIMIT })
  const { app, tokens } = built
  await fiveStaysOfA(app, tokens.writeA) // one more than the limit
  // The stays every search reads, counted where the repository hands them over.
  const reads = built.app.repos.fhirReads
  const encounters = reads.encounters
  const counter = { stays: 0 }
  reads.encounters = (scope, filter, now) => {
    const found = encounters(scope, filter, now)
    counter.stays = found.reduce((sum, group) => sum + group.stays.length, 0)
    return found
  }
  return { ...built, counter }
}

t.test('a location search reads no more than FHIR_MAX_SCAN_STAYS stays', async (t) => {
  const { app, tokens, counter } = await longWard(t)
  for (const url of [
    '/fhir/Encounter?location=bd-A..A-1,bd-A..A-2',
    '/fhir/Encounter?location=Location/bd-A..A-1,Location/bd-A..A-2&_summary=count',
    '/fhir/Encounter?location=bd-A..A-2,bd-A..A-1&date=ge2024-05-01',
  ]) {
    counter.stays = 0
    const res = await fhirGet(app, tokens.readA, url)
    t.ok(counter.stays <= LIMIT, `${url}: read ${counter.stays} stays, at most ${LIMIT}`)
    t.equal(res.status, 400, url)
    t.match(res.body, { resourceType: 'OperationOutcome', issue: [{ code: 'too-costly' }] }, url)
  }
})

t.test('a location search the current encounters answer is not refused for the beds history', async (t) => {
  const { app, tokens, counter } = await longWard(t)
  counter.stays = 0
  const res = await fhirGet(app, tokens.readA, '/fhir/Encounter?location=bd-A..A-1,bd-A..A-2&status=in-progress')
  t.equal(res.status, 200)
  t.same(ids(res.body), ['Encounter/en-A..V5'])
  t.ok(counter.stays <= LIMIT)
  const one = await fhirGet(app, tokens.readA, '/fhir/Encounter?location=bd-A..A-2')
  t.equal(one.status, 200, "one bed's three stays are within the limit")
  t.same(ids(one.body).sort(), ['Encounter/en-A..V2', 'Encounter/en-A..V4', 'Encounter/en-A..V5'])
})
