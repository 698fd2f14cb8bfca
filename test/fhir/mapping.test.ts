import t from 'tap'
import type { BedState } from '../../db/repositories/beds.js'
import { decodeCursor, encodeCursor, pageAfter, searchFingerprint } from '../../fhir/bundle.js'
import { encounterId, toEncounter } from '../../fhir/encounter.js'
import { FHIR_ID, fhirId, namesOfId } from '../../fhir/ids.js'
import { bedId, wardPlaces } from '../../fhir/location.js'
import { FhirError } from '../../fhir/outcome.js'
import { parseDate, periodMatches } from '../../fhir/search.js'
import type { WardOccupant } from '../../schemas/ward-occupants.js'
import { assertValidFhir, fhirProblems } from './validate.js'

// The mapping from the ward's records to FHIR resources, without HTTP.

const SYSTEMS = { patient: 'urn:p', practitioner: 'urn:d', encounter: 'urn:e', classCode: 'IMP' }

t.test('ids: valid FHIR ids, readable, reversible, the same for the same names', async (t) => {
  const names = [
    ['ward-a', 'A-12'],
    ['Station 3/Süd', 'Bett 4 (Fenster)'],
    ['', 'bed'],
    ['a..b', '.2e'],
    ['x'.repeat(40), 'y'.repeat(40)],
    ['日本', '床'],
  ]
  for (const pair of names) {
    const id = fhirId('bed', pair)
    t.match(id, FHIR_ID, `${JSON.stringify(pair)} -> ${id}`)
    t.equal(fhirId('bed', [...pair]), id, 'deterministic')
    if (!id.startsWith('bd.')) t.same(namesOfId('bed', id), pair, 'reversible')
  }
  t.equal(fhirId('bed', ['ward-a', 'A-12']), 'bd-ward-a..A-12', 'plain names stay readable')
  t.match(fhirId('bed', ['x'.repeat(40), 'y'.repeat(40)]), /^bd\.[a-z2-7]{52}$/, 'a long one is hashed')
  t.not(fhirId('bed', ['a', 'b']), fhirId('room', ['a', 'b']), 'the kind is part of the id')
  t.not(fhirId('bed', ['a b', 'c']), fhirId('bed', ['a', 'b c']), 'names do not run into each other')
  t.equal(namesOfId('bed', 'bd-A.2d'), null, 'only the one spelling of a name is an id')
  t.equal(namesOfId('bed', 'wa-A'), null, 'another kind is not read')
  t.equal(namesOfId('encounter', 'en-A.zz'), null, 'a broken escape is not an id')
})

const stay = (fields: Partial<WardOccupant>): WardOccupant => ({
  id: 'o1',
  createdAt: 1_000,
  createdBy: 'nurse',
  encounter: 'V1',
  bed: 'B1',
  occupiedAt: 1_000,
  occupiedBy: 'patient-1',
  facility: 'W',
  ...fields,
})

t.test('Location: ward, rooms and beds, with the bed status of table 0116', async (t) => {
  const bed = (name: string, state: BedState['state'], room?: string): BedState => ({
    bed: name,
    active: state === 'occupied' ? [stay({ bed: name })] : [],
    state,
    ...(room === undefined ? {} : { room }),
  })
  const beds = [
    bed('B1', 'occupied', 'R1'),
    bed('B2', 'free', 'R1'),
    bed('B3', 'cleaning'),
    bed('B4', 'closed'),
    bed('B5', 'contaminated'),
    bed('B6', 'isolated'),
    bed('B7', 'expected'),
    bed('B8', 'on-leave'),
  ]
  const places = wardPlaces('W', beds)
  t.same(
    places.map((p) => [p.kind, p.resource.id]),
    [['ward', 'wa-W'], ['room', 'ro-W..R1'], ...beds.map((b) => ['bed', bedId('W', b.bed)])],
  )
  const status = (name: string) =>
    (places.find((p) => p.resource.name === name)?.resource.operationalStatus as { code: string } | undefined)?.code
  t.same(
    beds.map((b) => status(b.bed)),
    ['O', 'U', 'H', 'C', 'K', 'I', 'U', 'O'],
  )
  t.same(places.find((p) => p.resource.id === 'bd-W..B1')?.resource.partOf, {
    reference: 'Location/ro-W..R1',
    display: 'R1',
  })
  t.same(places.find((p) => p.resource.id === 'bd-W..B3')?.resource.partOf, {
    reference: 'Location/wa-W',
    display: 'W',
  })
  t.same(places.find((p) => p.resource.id === 'bd-W..B1')?.currentEncounters, ['V1'])
  for (const place of places) assertValidFhir(t, place.resource, place.resource.id)
  t.same(wardPlaces('W', beds), places, 'the same records give the same resources and versions')
  const changed = wardPlaces('W', [{ ...bed('B1', 'occupied', 'R1'), state: 'isolated' }, ...beds.slice(1)])
  t.not(changed[2]?.resource.meta?.versionId, places[2]?.resource.meta?.versionId, 'a changed bed has a new version')
  t.equal(changed[3]?.resource.meta?.versionId, places[3]?.resource.meta?.versionId, 'the others keep theirs')
})

/** The records of an encounter with stays only (no bed expects it). */
const ofStays = (facility: string | null, stays: WardOccupant[]) => ({
  facility,
  encounter: (stays[0] as WardOccupant).encounter,
  stays,
  expectations: [],
})

t.test('Encounter: status, subject, participants, a location per stay, period', async (t) => {
  const stays = [
    stay({ id: 'o1', bed: 'B1', occupiedAt: 1_000, dischargedAt: 5_000, dischargedBy: 'n', provider: 'dr-a' }),
    stay({ id: 'o2', bed: 'B2', occupiedAt: 5_000, provider: 'dr-b' }),
  ]
  const active = toEncounter(ofStays('W', stays), SYSTEMS)
  t.equal(active.status, 'in-progress')
  t.equal(active.resource.id, encounterId('W', 'V1'))
  t.same(active.resource.subject, { identifier: { system: 'urn:p', value: 'patient-1' }, display: 'patient-1' })
  t.same(active.resource.participant, [
    { individual: { identifier: { system: 'urn:d', value: 'dr-a' }, display: 'dr-a' } },
    { individual: { identifier: { system: 'urn:d', value: 'dr-b' }, display: 'dr-b' } },
  ])
  t.same(active.resource.location, [
    {
      location: { reference: 'Location/bd-W..B1', display: 'B1' },
      status: 'completed',
      period: { start: new Date(1_000).toISOString(), end: new Date(5_000).toISOString() },
    },
    {
      location: { reference: 'Location/bd-W..B2', display: 'B2' },
      status: 'active',
      period: { start: new Date(5_000).toISOString() },
    },
  ])
  t.same(active.resource.period, { start: new Date(1_000).toISOString() })
  t.same(active.currentBeds, ['bd-W..B2'])
  assertValidFhir(t, active.resource)
  const done = toEncounter(
    ofStays('W', [stays[0] as WardOccupant, { ...(stays[1] as WardOccupant), dischargedAt: 9_000 }]),
    SYSTEMS,
  )
  t.equal(done.status, 'finished')
  t.same(done.resource.period, { start: new Date(1_000).toISOString(), end: new Date(9_000).toISOString() })
  t.equal(done.resource.meta?.lastUpdated, new Date(9_000).toISOString())
  const none = toEncounter(ofStays(null, [stay({ facility: undefined })]), SYSTEMS)
  t.same(
    none.resource.serviceProvider,
    { display: '(no facility)' },
    'records without a facility name no ward system value',
  )
  assertValidFhir(t, none.resource)
})

t.test('paging cursor: a keyset, checked against its search', async (t) => {
  const fingerprint = searchFingerprint('Encounter', { status: ['in-progress'], _count: ['2'] })
  const cursor = encodeCursor(fingerprint, [5, 'en-b'])
  t.same(decodeCursor(cursor, fingerprint), [5, 'en-b'])
  t.throws(
    () => decodeCursor(cursor, searchFingerprint('Encounter', { status: ['finished'], _count: ['2'] })),
    FhirError,
  )
  t.throws(() => decodeCursor(`${cursor.slice(0, 5)}A${cursor.slice(6)}`, fingerprint), FhirError, 'changed by hand')
  t.throws(() => decodeCursor('nonsense', fingerprint), FhirError)
  const items = ['a', 'b', 'c', 'd', 'e']
  const first = pageAfter(items, (x) => [x], null, 2)
  t.same(first, { matches: ['a', 'b'], total: 5, next: ['b'] })
  t.same(
    pageAfter(['a', 'c', 'd'], (x) => [x], ['b'], 2).matches,
    ['c', 'd'],
    'after a record gone: the next one, none skipped',
  )
  t.same(
    pageAfter(items, (x) => [x], ['d'], 2),
    { matches: ['e'], total: 5 },
    'the last page has no next',
  )
})

t.test('dates: precision is a range, prefixes compare periods', async (t) => {
  const day = parseDate('date', '2024-05-01')
  t.same([day.low, day.high], [Date.UTC(2024, 4, 1), Date.UTC(2024, 4, 2)])
  t.same(parseDate('date', 'ge2024-05').high, Date.UTC(2024, 5, 1))
  t.equal(parseDate('date', 'lt2024-05-01T10:00:00+02:00').low, Date.UTC(2024, 4, 1, 8))
  t.throws(() => parseDate('date', 'yesterday'), FhirError)
  const may2 = Date.UTC(2024, 4, 2, 12)
  t.ok(periodMatches(parseDate('date', 'ge2024-05-01'), may2, null), 'an ongoing stay from May 2 is ge May 1')
  t.notOk(periodMatches(parseDate('date', 'lt2024-05-01'), may2, null), 'and not lt')
  t.ok(periodMatches(parseDate('date', 'eq2024-05-02'), may2, may2 + 1000), 'within the day: eq')
  t.notOk(periodMatches(parseDate('date', 'eq2024-05-02'), may2, null), 'ongoing: not within the day')
})

t.test('the validator is no rubber stamp: it refuses what R4 does not allow', async (t) => {
  t.not(fhirProblems({ resourceType: 'Encounter', id: 'x', status: 'bogus', class: { code: 'IMP' } }).length, 0)
  t.not(fhirProblems({ resourceType: 'Location', id: 'x', name: 'n', colour: 'red' }).length, 0, 'an unknown field')
  t.not(fhirProblems({ resourceType: 'Location', id: 'x y' }).length, 0, 'an id with a space')
})
