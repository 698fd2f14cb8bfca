import type { Test } from 'tap'
import t from 'tap'
import type { Config } from '../../config.js'
import { bearer, type TestApp } from '../helper.js'
import { feedWard } from '../hl7/ward.js'
import { assertValidFhir } from './validate.js'
import { fhirGet, ids } from './ward.js'

/**
 * The encounters a bed expects (A14 pending admission, A15 pending transfer) in the FHIR view: a
 * pending admission is a planned Encounter, a pending transfer a planned location of its Encounter;
 * both go when the expectation ends (admitted, cancelled, lapsed), and only the ward that expects
 * them sees them. Driven over MLLP, as the HIS sends them.
 */

const JAN5 = (hour: number) => new Date(Date.UTC(2026, 0, 5, hour)).toISOString()

/** A FHIR answer, every resource in it checked against R4 (the Bundle's entries too). */
async function fhir(t: Test, app: TestApp, token: string, url: string) {
  const answer = await fhirGet(app, token, url)
  if (answer.body !== null) assertValidFhir(t, answer.body)
  for (const entry of answer.body?.entry ?? []) assertValidFhir(t, entry.resource)
  return answer
}

const ward = (t: Test, overrides: Partial<Config> = {}) => feedWard(t, 'A', { BED_EXPECTED_HOURS: 0, ...overrides })

t.test('a pending admission is a planned Encounter, found by status, bed and revinclude, until admitted', async (t) => {
  const { app, tokens, send } = await ward(t)
  t.equal((await send({ event: 'A14', encounter: 'E1', patient: 'p1', bed: 'B1', at: '202601050900' })).code, 'AA')

  const read = await fhir(t, app, tokens.readA, '/fhir/Encounter/en-A..E1')
  t.equal(read.status, 200)
  t.match(read.body, {
    resourceType: 'Encounter',
    id: 'en-A..E1',
    status: 'planned',
    identifier: [{ value: 'E1' }],
    location: [{ location: { reference: 'Location/bd-A..B1', display: 'B1' }, status: 'planned' }],
    meta: { lastUpdated: JAN5(9) },
  })
  t.equal(read.body.location.length, 1)
  t.notOk(read.body.location[0].period, 'a planned location has no period: the patient was not there yet')
  t.notOk(read.body.subject, 'the expectation names no patient')
  t.notOk(read.body.period, 'no stay, no period')

  const found = async (url: string, mode = 'match') => ids((await fhir(t, app, tokens.readA, url)).body, mode)
  t.same(await found('/fhir/Encounter?status=planned'), ['Encounter/en-A..E1'])
  t.same(await found('/fhir/Encounter?status=in-progress'), [])
  t.same(await found('/fhir/Encounter?location=Location/bd-A..B1'), ['Encounter/en-A..E1'])
  t.same(await found('/fhir/Encounter?identifier=E1'), ['Encounter/en-A..E1'])
  t.same(await found('/fhir/Encounter?date=ge2000'), [], 'no period: no date matches it')
  t.same(await found('/fhir/Encounter?patient:identifier=p1'), [])
  t.same(await found('/fhir/Location?_id=bd-A..B1&_revinclude=Encounter:location', 'include'), ['Encounter/en-A..E1'])
  t.same(await found('/fhir/Encounter?_id=en-A..E1&_include=Encounter:location', 'include'), ['Location/bd-A..B1'])

  // Sorted by date, an Encounter without a period comes after the others, either way.
  await send({ event: 'A01', encounter: 'E0', patient: 'p0', bed: 'B0', at: '202601050800' })
  t.same(await found('/fhir/Encounter?_sort=date'), ['Encounter/en-A..E0', 'Encounter/en-A..E1'])
  t.same(await found('/fhir/Encounter?_sort=-date'), ['Encounter/en-A..E0', 'Encounter/en-A..E1'])
  const paged = await fhir(t, app, tokens.readA, '/fhir/Encounter?_sort=date&_count=1')
  const next = paged.body.link.find((l: { relation: string }) => l.relation === 'next').url as string
  t.same(ids((await fhir(t, app, tokens.readA, new URL(next).pathname + new URL(next).search)).body), [
    'Encounter/en-A..E1',
  ])

  t.equal((await send({ event: 'A01', encounter: 'E1', patient: 'p1', bed: 'B1', at: '202601051000' })).code, 'AA')
  const admitted = (await fhir(t, app, tokens.readA, '/fhir/Encounter/en-A..E1')).body
  t.match(admitted, { status: 'in-progress', subject: { identifier: { value: 'p1' } }, period: { start: JAN5(10) } })
  t.same(
    admitted.location.map((l: { status: string }) => l.status),
    ['active'],
    'the planned entry is gone',
  )
  t.same(await found('/fhir/Encounter?status=planned'), [])
})

t.test('a pending transfer adds a planned location to the Encounter in progress; A26 takes it away', async (t) => {
  const { app, tokens, send } = await ward(t)
  await send({ event: 'A01', encounter: 'E1', patient: 'p1', bed: 'B1', at: '202601050900' })
  t.equal((await send({ event: 'A15', encounter: 'E1', bed: 'B1', pv2: 'W1^R2^B2^A', at: '202601051000' })).code, 'AA')
  const read = (await fhir(t, app, tokens.readA, '/fhir/Encounter/en-A..E1')).body
  t.match(read, { status: 'in-progress', subject: { identifier: { value: 'p1' } } })
  t.same(
    read.location.map((l: { location: { reference: string }; status: string }) => [l.location.reference, l.status]),
    [
      ['Location/bd-A..B1', 'active'],
      ['Location/bd-A..B2', 'planned'],
    ],
  )
  const found = async (url: string, mode = 'match') => ids((await fhir(t, app, tokens.readA, url)).body, mode)
  t.same(await found('/fhir/Encounter?location=bd-A..B2'), ['Encounter/en-A..E1'])
  t.same(await found('/fhir/Encounter?status=in-progress&location=bd-A..B2'), ['Encounter/en-A..E1'])
  t.same(await found('/fhir/Encounter?status=planned'), [], 'in progress: not a planned Encounter')
  t.same(await found('/fhir/Location?_id=bd-A..B2&_revinclude=Encounter:location', 'include'), ['Encounter/en-A..E1'])

  t.equal((await send({ event: 'A26', encounter: 'E1', at: '202601051100' })).code, 'AA')
  const after = (await fhir(t, app, tokens.readA, '/fhir/Encounter/en-A..E1')).body
  t.same(
    after.location.map((l: { status: string }) => l.status),
    ['active'],
  )
  t.same(await found('/fhir/Encounter?location=bd-A..B2'), [])
})

// The answers are remembered (FHIR_CACHE_BYTES, the default): the same search must change with the ward.
t.test('A14 then A27 changes the same search and read: a cancelled pending admission is not kept', async (t) => {
  const { app, tokens, send } = await ward(t, { FHIR_CACHE_BYTES: 8_388_608 })
  const search = async () => (await fhir(t, app, tokens.readA, '/fhir/Encounter?status=planned')).body.total
  const read = async () => (await fhir(t, app, tokens.readA, '/fhir/Encounter/en-A..E2')).status
  t.equal(await search(), 0)
  t.equal(await read(), 404)
  await send({ event: 'A14', encounter: 'E2', bed: 'B3', at: '202601051000' })
  t.equal(await search(), 1)
  t.equal(await read(), 200)
  t.equal((await send({ event: 'A27', encounter: 'E2', at: '202601051100' })).code, 'AA')
  t.equal(await search(), 0)
  t.equal(await read(), 404, 'the ward does not keep a cancelled pending admission')
})

t.test('a lapsed expectation (BED_EXPECTED_HOURS) is not answered, as GET /beds does not show it', async (t) => {
  const { app, tokens, send } = await ward(t, { BED_EXPECTED_HOURS: 1 })
  await send({ event: 'A14', encounter: 'OLD', bed: 'B1', at: '202601050900' })
  const now = new Date(Math.floor(Date.now() / 1000) * 1000)
  await send({ event: 'A14', encounter: 'NEW', bed: 'B2', at: now.toISOString().replace(/[-:T]/g, '').slice(0, 14) })
  const beds = (await app.inject({ url: '/beds?facility=A', headers: bearer(tokens.readA) })).json().beds as {
    bed: string
    expected?: unknown
  }[]
  t.same(
    beds.filter((b) => b.expected !== undefined).map((b) => b.bed),
    ['B2'],
  )
  t.same(ids((await fhir(t, app, tokens.readA, '/fhir/Encounter?status=planned')).body), ['Encounter/en-A..NEW'])
  t.equal((await fhir(t, app, tokens.readA, '/fhir/Encounter/en-A..OLD')).status, 404)
})

t.test("another facility's token never sees a planned Encounter", async (t) => {
  const { app, tokens, send } = await ward(t)
  await send({ event: 'A14', encounter: 'E1', bed: 'B1', at: '202601050900' })
  await send({ event: 'A01', encounter: 'V1', patient: 'p1', bed: 'B5', at: '202601050900' })
  await send({ event: 'A15', encounter: 'V1', bed: 'B5', pv2: 'W1^R2^B6^A', at: '202601051000' })
  // B expects its own patient in its own B1: the same bed name, another ward.
  await send({ event: 'A14', encounter: 'E9', bed: 'B1', facility: 'B', at: '202601050900' })
  t.equal((await fhir(t, app, tokens.readA, '/fhir/Encounter/en-A..E1')).status, 200, 'A sees its own')

  t.equal((await fhir(t, app, tokens.writeB, '/fhir/Encounter/en-A..E1')).status, 404)
  const searches = [
    '/fhir/Encounter',
    '/fhir/Encounter?status=planned',
    '/fhir/Encounter?status=planned,in-progress',
    '/fhir/Encounter?identifier=E1',
    '/fhir/Encounter?_id=en-A..E1',
    '/fhir/Encounter?location=bd-A..B1',
    '/fhir/Encounter?location=bd-A..B6',
    '/fhir/Encounter?_include=Encounter:location',
    '/fhir/Location?_revinclude=Encounter:location',
    '/fhir/Location?_id=bd-A..B1&_revinclude=Encounter:location',
  ]
  for (const url of searches) {
    // The self link repeats the search as asked: what the answer adds is its entries.
    const entries = JSON.stringify((await fhir(t, app, tokens.writeB, url)).body.entry ?? [])
    t.notMatch(entries, /en-A\.\.|bd-A\.\./, `${url}: nothing of A`)
  }
  t.same(ids((await fhir(t, app, tokens.writeB, '/fhir/Encounter?status=planned')).body), ['Encounter/en-B..E9'])
  for (const [url, total] of [
    ['/fhir/Encounter?status=planned&_summary=count', 1],
    ['/fhir/Encounter?identifier=E1&_summary=count', 0],
    ['/fhir/Encounter?location=bd-B..B1&_summary=count', 1],
    ['/fhir/Encounter?location=bd-A..B1&_summary=count', 0],
    ['/fhir/Encounter?_summary=count', 1],
  ] as const)
    t.equal((await fhir(t, app, tokens.writeB, url)).body.total, total, `${url}: B's own only`)
})
