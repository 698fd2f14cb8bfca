import t, { type Test } from 'tap'
import { buildTestApp } from '../helper.js'
import { assertValidFhir } from './validate.js'
import { admit, fhirGet, fiveStaysOfA, ids } from './ward.js'

// An Encounter search with nothing to start from reads every stay the ward ever had: on a ward
// with years of history that held the event loop for seconds and, at a million stays, took the
// process past its heap (it ended). Past FHIR_MAX_SCAN_STAYS such a search is a 400 too-costly;
// every narrowed search (status, identifier, patient, _id) answers whatever the history, and one by
// location whatever the history of the other beds (test/fhir/scan-limit-location.test.ts).

const LIMIT = 4

async function longWard(t: Test) {
  const built = await buildTestApp(t, { FHIR_MAX_SCAN_STAYS: LIMIT })
  const { app, tokens } = built
  await fiveStaysOfA(app, tokens.writeA) // one more than the limit
  await admit(app, tokens.writeB, { bed: 'B-1', encounter: 'W1', occupiedBy: 'q1' })
  return built
}

t.test('past FHIR_MAX_SCAN_STAYS an unnarrowed search is 400 too-costly, naming what narrows it', async (t) => {
  const { app, tokens } = await longWard(t)
  for (const url of [
    '/fhir/Encounter',
    '/fhir/Encounter?_count=1',
    '/fhir/Encounter?_summary=count',
    '/fhir/Encounter?date=ge2024-05-01',
    '/fhir/Encounter?status=finished',
    '/fhir/Encounter?_sort=-date',
  ]) {
    const res = await fhirGet(app, tokens.readA, url)
    t.equal(res.status, 400, url)
    assertValidFhir(t, res.body, url)
    t.match(res.body, { resourceType: 'OperationOutcome', issue: [{ severity: 'error', code: 'too-costly' }] }, url)
    t.match(res.body.issue[0].diagnostics, /FHIR_MAX_SCAN_STAYS.*status=in-progress.*location/, url)
  }
  const admin = await fhirGet(app, tokens.admin, '/fhir/Encounter')
  t.equal(admin.status, 400, 'an admin without a facility counts the stays of every ward')
  const ofB = await fhirGet(app, tokens.writeB, '/fhir/Encounter')
  t.equal(ofB.status, 200, "ward B's one stay is within the limit: counted per facility")
  t.same(ids(ofB.body), ['Encounter/en-B..W1'])
})

t.test('narrowed searches answer whatever the history, location included', async (t) => {
  const { app, tokens } = await longWard(t)
  const found = async (url: string) => {
    const res = await fhirGet(app, tokens.readA, url)
    t.equal(res.status, 200, url)
    assertValidFhir(t, res.body, url)
    return ids(res.body).sort()
  }
  t.same(await found('/fhir/Encounter?location=Location/bd-A..A-2'), [
    'Encounter/en-A..V2',
    'Encounter/en-A..V4',
    'Encounter/en-A..V5',
  ])
  t.same(await found('/fhir/Encounter?location=bd-A..A-1&date=lt2024-05-02'), ['Encounter/en-A..V1'])
  t.same(await found('/fhir/Encounter?location=bd-A..A-1,bd-A..A-9'), ['Encounter/en-A..V1', 'Encounter/en-A..V3'])
  t.same(await found('/fhir/Encounter?location=bd-B..B-1'), [], "ward B's bed, asked by A: nothing")
  t.same(await found('/fhir/Encounter?location=not-a-bed'), [])
  t.same(await found('/fhir/Encounter?status=in-progress'), ['Encounter/en-A..V5'])
  t.same(await found('/fhir/Encounter?identifier=V3'), ['Encounter/en-A..V3'])
  t.same(await found('/fhir/Encounter?subject:identifier=p4'), ['Encounter/en-A..V4'])
  t.same(await found('/fhir/Encounter?_id=en-A..V1'), ['Encounter/en-A..V1'])
  const read = await fhirGet(app, tokens.readA, '/fhir/Encounter/en-A..V2')
  t.equal(read.status, 200, 'a read by a readable id looks up its number')
})
