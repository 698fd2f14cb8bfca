import t, { type Test } from 'tap'
import { buildTestApp } from '../helper.js'
import { assertValidFhir } from './validate.js'
import { admit, allPages, discharge, fhirGet, ids } from './ward.js'

// Location and Encounter read and search through the FHIR endpoint, every answer validated against R4.

async function ward(t: Test) {
  const built = await buildTestApp(t)
  const { app, tokens } = built
  const a = tokens.writeA
  await admit(app, a, {
    bed: 'A-1',
    room: 'R1',
    encounter: 'V1',
    occupiedBy: 'p1',
    provider: 'dr-x',
    occupiedAt: Date.UTC(2024, 4, 1, 10),
  })
  const v2 = await admit(app, a, {
    bed: 'A-2',
    room: 'R1',
    encounter: 'V2',
    occupiedBy: 'p2',
    occupiedAt: Date.UTC(2024, 4, 3, 10),
  })
  await admit(app, a, {
    bed: 'A-3',
    room: 'R2',
    encounter: 'V3',
    occupiedBy: 'p3',
    occupiedAt: Date.UTC(2024, 4, 5, 10),
  })
  await discharge(app, a, v2.id)
  await admit(app, a, { bed: 'A-4', encounter: 'V4', occupiedBy: 'p2', occupiedAt: Date.UTC(2024, 4, 6, 10) })
  const put = await app.inject({
    method: 'PUT',
    url: '/beds/A-2/state',
    headers: { authorization: `Bearer ${a}` },
    payload: { state: 'closed' },
  })
  t.equal(put.statusCode, 200)
  await admit(app, tokens.writeB, { bed: 'B-1', room: 'R1', encounter: 'V1', occupiedBy: 'q1' })
  return built
}

t.test('Location: read and search by each parameter, with the current encounters', async (t) => {
  const { app, tokens } = await ward(t)
  const get = async (url: string) => {
    const res = await fhirGet(app, tokens.readA, url)
    t.equal(res.status, 200, url)
    assertValidFhir(t, res.body, url)
    return res.body
  }
  t.same(ids(await get('/fhir/Location?_count=50')).sort(), [
    'Location/bd-A..A-1',
    'Location/bd-A..A-2',
    'Location/bd-A..A-3',
    'Location/bd-A..A-4',
    'Location/ro-A..R1',
    'Location/ro-A..R2',
    'Location/wa-A',
  ])
  t.same(ids(await get('/fhir/Location?name=a-')).length, 4, 'name: starts with, any case')
  t.same(ids(await get('/fhir/Location?name:exact=A-3')), ['Location/bd-A..A-3'])
  t.same(ids(await get('/fhir/Location?partof=Location/ro-A..R1')), ['Location/bd-A..A-1', 'Location/bd-A..A-2'])
  t.same(ids(await get('/fhir/Location?partof=wa-A')).sort(), [
    'Location/bd-A..A-4',
    'Location/ro-A..R1',
    'Location/ro-A..R2',
  ])
  t.same(ids(await get('/fhir/Location?identifier=urn:facility-service:bed|A/A-3')), ['Location/bd-A..A-3'])
  t.same(ids(await get('/fhir/Location?operational-status=http://terminology.hl7.org/CodeSystem/v2-0116|C')), [
    'Location/bd-A..A-2',
  ])
  t.same(ids(await get('/fhir/Location?operational-status=O')).length, 3)
  t.same(ids(await get('/fhir/Location?_id=wa-A,ro-A..R2')), ['Location/ro-A..R2', 'Location/wa-A'])
  const withEncounters = await get('/fhir/Location?partof=ro-A..R1&_revinclude=Encounter:location')
  t.same(ids(withEncounters), ['Location/bd-A..A-1', 'Location/bd-A..A-2'])
  t.same(ids(withEncounters, 'include'), ['Encounter/en-A..V1'], 'the current encounter of each bed (A-2 is empty)')
  t.equal(withEncounters.total, 2, 'includes are not counted')
  const count = await get('/fhir/Location?operational-status=O&_summary=count')
  t.same([count.total, count.entry], [3, undefined])
  const read = await fhirGet(app, tokens.readA, '/fhir/Location/bd-A..A-2')
  t.equal(read.body.operationalStatus.code, 'C')
  t.equal(read.headers.etag, `W/"${read.body.meta.versionId}"`)
  t.equal(
    (await fhirGet(app, tokens.readA, '/fhir/Location/bd-A..A-2', { 'if-none-match': read.headers.etag as string }))
      .status,
    304,
  )
  await app.inject({
    method: 'PUT',
    url: '/beds/A-2/state',
    headers: { authorization: `Bearer ${tokens.writeA}` },
    payload: { state: null },
  })
  const reopened = await fhirGet(app, tokens.readA, '/fhir/Location/bd-A..A-2', {
    'if-none-match': read.headers.etag as string,
  })
  t.equal(reopened.status, 200, 'a changed bed is sent again')
  t.equal(reopened.body.operationalStatus.code, 'U')
  t.equal((await fhirGet(app, tokens.readA, '/fhir/Location/bd-A..nope')).status, 404)
})

t.test('Encounter: read and search by each parameter, sorted, with their locations', async (t) => {
  const { app, tokens } = await ward(t)
  const get = async (url: string) => {
    const res = await fhirGet(app, tokens.readA, url)
    t.equal(res.status, 200, `${url}: ${res.status}`)
    assertValidFhir(t, res.body, url)
    return res.body
  }
  const all = ['Encounter/en-A..V1', 'Encounter/en-A..V2', 'Encounter/en-A..V3', 'Encounter/en-A..V4']
  t.same(ids(await get('/fhir/Encounter')), all)
  t.same(ids(await get('/fhir/Encounter?status=in-progress')), [all[0], all[2], all[3]])
  t.same(ids(await get('/fhir/Encounter?status=finished')), [all[1]])
  t.same(ids(await get('/fhir/Encounter?identifier=urn:facility-service:encounter|V3')), [all[2]])
  t.same(ids(await get('/fhir/Encounter?identifier=other-system|V3')), [], 'the system counts')
  t.same(ids(await get('/fhir/Encounter?subject:identifier=urn:facility-service:patient|p2')), [all[1], all[3]])
  t.same(ids(await get('/fhir/Encounter?patient:identifier=p2&status=in-progress')), [all[3]])
  t.same(ids(await get('/fhir/Encounter?location=Location/bd-A..A-2')), [all[1]])
  t.same(ids(await get('/fhir/Encounter?date=ge2024-05-03&date=lt2024-05-06')), [all[0], all[1], all[2]])
  t.same(ids(await get('/fhir/Encounter?date=lt2024-05-02')), [all[0]])
  t.same(ids(await get('/fhir/Encounter?_sort=-date')), [all[3], all[2], all[1], all[0]])
  t.same(ids(await get('/fhir/Encounter?_sort=date&_count=2')), [all[0], all[1]])
  t.same(ids(await get('/fhir/Encounter?_lastUpdated=lt2020-01-01')), [], 'the records were written now')
  const included = await get('/fhir/Encounter?status=in-progress&_include=Encounter:location')
  t.same(ids(included, 'include').sort(), ['Location/bd-A..A-1', 'Location/bd-A..A-3', 'Location/bd-A..A-4'])
  t.equal(
    (await fhirGet(app, tokens.readA, '/fhir/Encounter?subject=Patient/p2')).status,
    400,
    'subject only by identifier',
  )
  t.equal(
    (await fhirGet(app, tokens.readA, '/fhir/Encounter?_include=Encounter:subject')).status,
    400,
    'an include not supported',
  )
  t.equal((await fhirGet(app, tokens.readA, '/fhir/Encounter?_sort=status')).status, 400)
  const unknown = await get('/fhir/Encounter?colour=red&status=finished')
  t.same(ids(unknown), [all[1]], 'an unknown parameter is ignored')
  t.notMatch(unknown.link[0].url, /colour/, 'and left out of the self link')
  const read = await fhirGet(app, tokens.readA, '/fhir/Encounter/en-A..V2')
  t.equal(read.status, 200)
  assertValidFhir(t, read.body)
  t.equal(read.body.status, 'finished')
  t.equal(read.headers.etag, `W/"${read.body.meta.versionId}"`)
  t.equal(
    (await fhirGet(app, tokens.readA, '/fhir/Encounter/en-A..V2', { 'if-none-match': read.headers.etag as string }))
      .status,
    304,
  )
})

t.test('the same parameters on two resource types are two searches', async (t) => {
  const { app, tokens } = await ward(t)
  for (const type of ['Location', 'Encounter', 'Location']) {
    const res = await fhirGet(app, tokens.readA, `/fhir/${type}?_count=3`)
    t.same(
      [...new Set(res.body.entry.map((e: { resource: { resourceType: string } }) => e.resource.resourceType))],
      [type],
      `${type}: only ${type}s`,
    )
  }
})

t.test('paging by next links: every match once, even when the ward changes between pages', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  for (let i = 10; i < 30; i++)
    await admit(app, tokens.writeA, { bed: `A-${i}`, encounter: `V${i}`, occupiedBy: `p${i}` })
  const first = (await fhirGet(app, tokens.readA, '/fhir/Encounter?status=in-progress&_count=7')).body
  assertValidFhir(t, first)
  t.equal(first.total, 20)
  const seen = ids(first)
  t.equal(seen.length, 7)
  // Between pages: one encounter already listed and one still to come leave, a new one arrives.
  const listed = await app.inject({
    url: '/ward-occupants?encounter=V10',
    headers: { authorization: `Bearer ${tokens.readA}` },
  })
  await discharge(app, tokens.writeA, listed.json().wardOccupants[0].id)
  const later = await app.inject({
    url: '/ward-occupants?encounter=V25',
    headers: { authorization: `Bearer ${tokens.readA}` },
  })
  await discharge(app, tokens.writeA, later.json().wardOccupants[0].id)
  await admit(app, tokens.writeA, { bed: 'A-5', encounter: 'V05', occupiedBy: 'new' })
  const nextUrl = new URL(first.link.find((l: { relation: string }) => l.relation === 'next').url)
  const rest = await allPages(app, tokens.readA, nextUrl.pathname + nextUrl.search)
  for (const page of rest) assertValidFhir(t, page)
  const after = rest.flatMap((page) => ids(page))
  t.same(
    after.filter((id) => seen.includes(id)),
    [],
    'no repeat',
  )
  const expected = Array.from({ length: 20 }, (_, i) => `Encounter/en-A..V${i + 10}`).filter(
    (id) => !seen.includes(id) && id !== 'Encounter/en-A..V25',
  )
  t.same(
    after,
    expected,
    'no skip: each later match once, in order (the one gone is gone, the new one sorts before the cursor)',
  )
  const tampered = nextUrl.search.replace(/_cursor=([^&]*)/, (_m, c: string) => `_cursor=${c.slice(0, -1)}x`)
  t.equal((await fhirGet(app, tokens.readA, nextUrl.pathname + tampered)).status, 400, 'a changed cursor is refused')
  const otherSearch = nextUrl.search.replace('status=in-progress', 'status=finished')
  t.equal((await fhirGet(app, tokens.readA, nextUrl.pathname + otherSearch)).status, 400, 'so is one of another search')
})
