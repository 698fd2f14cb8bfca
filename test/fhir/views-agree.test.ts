import fc from 'fast-check'
import { test } from 'tap'
import { buildApp } from '../../app.js'
import { defaultConfig } from '../../config.js'
import type { Role } from '../../domain/principal.js'
import { encounterId } from '../../fhir/encounter.js'
import { bedId, TABLE_0116_OF_STATE } from '../../fhir/location.js'
import type { WardOccupant } from '../../schemas/ward-occupants.js'
import { bearer } from '../helper.js'
import { ackOf, openSender, type Sender } from '../hl7/client.js'
import { adt } from '../hl7/messages.js'
import { propertyRuns } from '../property-runs.js'
import { sharedCompilers } from '../shared-compilers.js'

/**
 * The FHIR view and the REST view of the same ward say the same, for every token. fast-check draws
 * ward histories through the REST API (admissions, transfers, discharges and re-openings, cancels,
 * moves between facilities, a change of doctor) and through the ADT feed over MLLP (A01 admit, A02
 * transfer, to another facility too, A03 discharge, and their cancels A11, A12, A13; A14 and A15
 * pending admission and transfer, and their cancels A27, A26); then, for an unbound admin and a
 * token of each facility, every Encounter of `GET /fhir/Encounter` (paged by its next links) is what
 * that token's `GET /ward-occupants` says of that encounter in that facility, with the bed its
 * `GET /beds` says expects it, no more and no fewer, and every
 * bed Location of `GET /fhir/Location` is a bed of its `GET /beds`, with the same status.
 * The mapping is written out here again from the REST records (not core's code), so that a slip in
 * either view, or a record one view shows a token and the other hides, makes them differ.
 */

const FACILITIES = ['A', 'B'] as const
const BEDS = ['bed-1', 'bed-2', 'bed-3']
const ENCOUNTERS = ['enc-1', 'enc-2', 'enc-3', 'enc-4']
const roomOf = (bed: string) => (bed === 'bed-3' ? 'R-2' : 'R-1')
const patientOf = (encounter: string) => `p-${encounter.slice(4)}`

type Step =
  | { kind: 'admit' | 'transfer' | 'move'; encounter: number; facility: number; bed: number }
  | { kind: 'discharge' | 'reopen' | 'cancel' | 'doctor'; pick: number }
  | { kind: 'adt'; event: string; encounter: number; facility: number; bed: number }

/**
 * The ADT events of a stay's life: admit, transfer, discharge, and the cancel of each; a pending
 * admission and transfer (the bed expects the encounter: a planned Encounter or location) and theirs.
 */
const EVENTS = ['A01', 'A02', 'A03', 'A11', 'A12', 'A13', 'A14', 'A15', 'A26', 'A27']

const index = fc.nat(20)
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    arbitrary: fc.record({ kind: fc.constant('admit' as const), encounter: index, facility: index, bed: index }),
    weight: 4,
  },
  {
    arbitrary: fc.record({ kind: fc.constant('transfer' as const), encounter: index, facility: index, bed: index }),
    weight: 2,
  },
  {
    // A move to the other facility on its own weight: one encounter in two facilities is a floor below.
    arbitrary: fc.record({ kind: fc.constant('move' as const), encounter: index, facility: index, bed: index }),
    weight: 3,
  },
  {
    arbitrary: fc.record({
      kind: fc.constantFrom('reopen' as const, 'cancel' as const, 'doctor' as const),
      pick: index,
    }),
    weight: 3,
  },
  {
    // Discharges on their own weight: a finished Encounter needs every stay of it discharged, and the
    // histories must reach some (the floor below) in every run of the property, not in most.
    arbitrary: fc.record({ kind: fc.constant('discharge' as const), pick: index }),
    weight: 3,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('adt' as const),
      event: fc.constantFrom(...EVENTS),
      encounter: index,
      facility: index,
      bed: index,
    }),
    weight: 4,
  },
  {
    // The pending events more often: a later admission ends most of them before the views are read.
    arbitrary: fc.record({
      kind: fc.constant('adt' as const),
      event: fc.constantFrom('A14', 'A15'),
      encounter: index,
      facility: index,
      bed: index,
    }),
    weight: 2,
  },
)

const at = <T>(items: readonly T[], i: number) => items[i % items.length] as T

type App = Awaited<ReturnType<typeof buildApp>>

const hl7Time = (ms: number) => new Date(ms).toISOString().replace(/[-:T]/g, '').slice(0, 14)

/** Plays the steps; answers how many ADT messages the ward applied. */
async function play(app: App, admin: string, sender: Sender, steps: Step[]): Promise<number> {
  let applied = 0
  let clock = Date.parse('2026-01-05T08:00:00Z')
  let control = 0
  const send = async (method: 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) => {
    const res = await app.inject({ method, url, headers: bearer(admin), ...(payload ? { payload } : {}) })
    if (res.statusCode >= 500) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`)
    return res.statusCode === 200 ? (res.json() as WardOccupant) : null
  }
  const admit = async (encounter: string, facility: string, bed: string) => {
    clock += 60_000
    const created = await send('POST', '/ward-occupants', {
      encounter,
      bed,
      room: roomOf(bed),
      occupiedBy: patientOf(encounter),
      facility,
      occupiedAt: clock,
    })
    return created
  }
  /** Every stay's id, oldest first: the ADT feed's as well as the API's. */
  const stays = async () => {
    const res = await app.inject({ url: '/ward-occupants?$limit=1000&$sort[createdAt]=1', headers: bearer(admin) })
    return (res.json().wardOccupants as WardOccupant[]).map((o) => o.id)
  }
  const feed = async (event: string, encounter: string, facility: string, bed: string) => {
    clock += 60_000
    const text = adt({
      control: `MSG${++control}`,
      event,
      encounter,
      patient: patientOf(encounter),
      facility,
      room: roomOf(bed),
      bed,
      at: hl7Time(clock),
    })
    const ack = ackOf(await sender.send(text))
    if (ack.code !== 'AA' && ack.code !== 'AE') throw new Error(`${event}: ${ack.code} ${ack.text}`)
    if (ack.code === 'AA') applied++
  }
  const activeStay = async (encounter: string): Promise<WardOccupant | undefined> => {
    const res = await app.inject({
      url: `/ward-occupants?encounter=${encounter}&dischargedAt=null`,
      headers: bearer(admin),
    })
    return (res.json().wardOccupants as WardOccupant[])[0]
  }
  for (const s of steps) {
    if (s.kind === 'adt') await feed(s.event, at(ENCOUNTERS, s.encounter), at(FACILITIES, s.facility), at(BEDS, s.bed))
    else if (s.kind === 'admit') await admit(at(ENCOUNTERS, s.encounter), at(FACILITIES, s.facility), at(BEDS, s.bed))
    else if (s.kind === 'transfer' || s.kind === 'move') {
      const encounter = at(ENCOUNTERS, s.encounter)
      const current = await activeStay(encounter)
      if (current === undefined) continue
      await send('PATCH', `/ward-occupants/${current.id}`, { discharge: true })
      const facility = s.kind === 'move' ? (current.facility === 'A' ? 'B' : 'A') : (current.facility as string)
      await admit(encounter, facility, at(BEDS, s.bed))
    } else if ('pick' in s) {
      const ids = await stays()
      if (ids.length === 0) continue
      const id = at(ids, s.pick)
      if (s.kind === 'cancel') await send('DELETE', `/ward-occupants/${id}`)
      else if (s.kind === 'doctor') await send('PATCH', `/ward-occupants/${id}`, { provider: `DR${s.pick % 3}` })
      else await send('PATCH', `/ward-occupants/${id}`, { discharge: s.kind === 'discharge' })
    }
  }
  return applied
}

type Entry = { resource: Record<string, unknown> & { id: string }; search?: { mode: string } }

/** Every resource of a FHIR search, following its next links. */
async function fhirAll(app: App, token: string, url: string): Promise<Entry[]> {
  const entries: Entry[] = []
  let next: string | undefined = url
  for (let page = 0; next !== undefined; page++) {
    if (page > 50) throw new Error('the next links go round in circles')
    const res = await app.inject({ url: next.replace(/^https?:\/\/[^/]+/, ''), headers: bearer(token) })
    if (res.statusCode !== 200) throw new Error(`${next}: ${res.statusCode} ${res.body}`)
    const bundle = res.json() as { entry?: Entry[]; link: { relation: string; url: string }[] }
    entries.push(...(bundle.entry ?? []))
    next = bundle.link.find((l) => l.relation === 'next')?.url
  }
  return entries
}

/** What the REST records of one token say each of its Encounters must be; `expected`: the beds' expectations. */
function encountersFromRest(records: WardOccupant[], expected: Expectation[]) {
  const groups = new Map<string, WardOccupant[]>()
  for (const r of records) {
    const id = encounterId(r.facility ?? null, r.encounter)
    groups.set(id, [...(groups.get(id) ?? []), r])
  }
  const out = new Map<string, Facts>()
  for (const [id, stays] of groups) {
    stays.sort((a, b) => a.occupiedAt - b.occupiedAt || a.id.localeCompare(b.id))
    const latest = stays.at(-1) as WardOccupant
    const facility = latest.facility ?? null
    out.set(id, {
      identifier: latest.encounter,
      status: stays.some((s) => s.dischargedAt === undefined) ? 'in-progress' : 'finished',
      subject: latest.occupiedBy,
      serviceProvider: facility,
      participants: [...new Set(stays.flatMap((s) => (s.provider === undefined ? [] : [s.provider])))].sort(),
      locations: stays.map((s) => ({
        reference: `Location/${bedId(facility, s.bed)}`,
        status: s.dischargedAt === undefined ? 'active' : 'completed',
        start: s.occupiedAt,
        end: s.dischargedAt ?? null,
      })),
    })
  }
  for (const e of expected) {
    const id = encounterId(e.facility, e.encounter)
    const planned = { reference: `Location/${bedId(e.facility, e.bed)}`, status: 'planned', start: null, end: null }
    const known = out.get(id)
    if (known) known.locations.push(planned)
    else
      out.set(id, {
        identifier: e.encounter,
        status: 'planned',
        subject: null,
        serviceProvider: e.facility,
        participants: [],
        locations: [planned],
      })
  }
  return out
}

interface Expectation {
  facility: string
  bed: string
  encounter: string
}
interface Facts {
  identifier: string | undefined
  status: string
  subject: string | null
  serviceProvider: string | null
  participants: string[]
  locations: { reference: string; status: string; start: number | null; end: number | null }[]
}

/** The same facts read from a FHIR Encounter. */
function encounterFacts(resource: Record<string, unknown>) {
  const r = resource as {
    identifier: { value: string }[]
    status: string
    subject?: { identifier: { value: string } }
    serviceProvider: { identifier: { value: string } }
    participant?: { individual: { identifier: { value: string } } }[]
    location: { location: { reference: string }; status: string; period?: { start: string; end?: string } }[]
  }
  return {
    identifier: r.identifier[0]?.value,
    status: r.status,
    subject: r.subject?.identifier.value ?? null,
    serviceProvider: r.serviceProvider.identifier.value === '' ? null : r.serviceProvider.identifier.value,
    participants: (r.participant ?? []).map((p) => p.individual.identifier.value).sort(),
    locations: r.location.map((l) => ({
      reference: l.location.reference,
      status: l.status,
      start: l.period === undefined ? null : Date.parse(l.period.start),
      end: l.period?.end === undefined ? null : Date.parse(l.period.end),
    })),
  }
}

async function restRecords(app: App, token: string): Promise<WardOccupant[]> {
  const res = await app.inject({ url: '/ward-occupants?$limit=1000', headers: bearer(token) })
  return res.json().wardOccupants as WardOccupant[]
}

/** bed Location id → its HL7 0116 code, and the beds' expectations, from GET /beds of each facility the token sees. */
async function bedsFromRest(app: App, token: string, facilities: readonly string[]) {
  const beds = new Map<string, string>()
  const expected: Expectation[] = []
  for (const facility of facilities) {
    const res = await app.inject({ url: `/beds?facility=${facility}`, headers: bearer(token) })
    if (res.statusCode !== 200) throw new Error(res.body)
    for (const bed of res.json().beds as {
      bed: string
      state: keyof typeof TABLE_0116_OF_STATE
      expected?: { encounter: string }
    }[]) {
      beds.set(bedId(facility, bed.bed), TABLE_0116_OF_STATE[bed.state].code)
      if (bed.expected) expected.push({ facility, bed: bed.bed, encounter: bed.expected.encounter })
    }
  }
  // The order of an encounter's planned entries: by bed.
  expected.sort((a, b) => a.bed.localeCompare(b.bed))
  return { beds, expected }
}

type Reached = { encounters: number; moved: number; finished: number; planned: number; paged: number; adt: number }

/** One token's two views of the ward, compared; what they held is counted in `reached`. */
async function compareViews(app: App, token: string, facilities: readonly string[], count: number, reached: Reached) {
  const { beds, expected: expectations } = await bedsFromRest(app, token, facilities)
  const expected = encountersFromRest(await restRecords(app, token), expectations)
  const encounters = await fhirAll(app, token, `/fhir/Encounter?_count=${count}`)
  const seen = new Map(encounters.map((e) => [e.resource.id, encounterFacts(e.resource)]))
  if (seen.size !== encounters.length) throw new Error('an Encounter came twice across the pages')
  assertSame([...seen.keys()].sort(), [...expected.keys()].sort(), `${facilities}: the Encounters`)
  for (const [id, facts] of seen) assertSame(facts, expected.get(id), `${facilities}: Encounter ${id}`)
  reached.encounters += seen.size
  reached.paged += seen.size > count ? 1 : 0
  for (const facts of seen.values()) reached.finished += facts.status === 'finished' ? 1 : 0
  for (const facts of seen.values()) reached.planned += facts.locations.some((l) => l.status === 'planned') ? 1 : 0
  if (facilities.length === 2) reached.moved += seen.size - new Set([...seen.values()].map((f) => f.identifier)).size

  const locations = await fhirAll(app, token, `/fhir/Location?_count=${count + 2}`)
  const fhirBeds = locations
    .filter((e) => (e.resource.physicalType as { coding: { code: string }[] }).coding[0]?.code === 'bd')
    .map((e): [string, string] => [e.resource.id, (e.resource.operationalStatus as { code: string }).code])
  // In id order both: GET /beds lists a bed known only by an expectation after the others.
  const byId = (entries: [string, string][]) => Object.fromEntries(entries.sort(([a], [b]) => a.localeCompare(b)))
  assertSame(byId(fhirBeds), byId([...beds]), `${facilities}: the beds and their status`)
}

test('the FHIR view and the REST view say the same, for every token', async (t) => {
  const reached: Reached = { encounters: 0, moved: 0, finished: 0, planned: 0, paged: 0, adt: 0 }
  const config = defaultConfig({
    DATABASE_PATH: ':memory:',
    LOG_LEVEL: 'silent',
    RATE_LIMIT_MAX: 0,
    HL7_PORT: 0,
    HL7_TIMEZONE: 'UTC',
    // The messages are of January 2026: their expectations hold until ended.
    BED_EXPECTED_HOURS: 0,
  })
  await fc.assert(
    fc.asyncProperty(
      fc.array(step, { minLength: 1, maxLength: 24 }),
      fc.integer({ min: 1, max: 4 }),
      async (steps, count) => {
        const app = await buildApp(config, sharedCompilers)
        const sender = await openSender(app.hl7.port as number)
        const token = (role: Role, facility: string | null) =>
          app.tokens.create({ account: `${role}-${facility}`, role, facility }).token
        try {
          const admin = token('admin', null)
          await play(app, admin, sender, steps)
          reached.adt += steps.some((s) => s.kind === 'adt') ? 1 : 0
          await compareViews(app, admin, FACILITIES, count, reached)
          await compareViews(app, token('read', 'A'), ['A'], count, reached)
          await compareViews(app, token('write', 'B'), ['B'], count, reached)
        } finally {
          await sender.close()
          await app.close()
        }
      },
    ),
    { numRuns: propertyRuns(40) },
  )
  // The histories reached what they are for: encounters, finished ones, expected ones, one in two facilities, pages, ADT.
  const { encounters, finished, planned, moved, paged, adt: fed } = reached
  t.ok(encounters > 0 && finished > 0 && planned > 0 && moved > 0 && paged > 0 && fed > 0, JSON.stringify(reached))
})

function assertSame(actual: unknown, expected: unknown, what: string): void {
  const a = JSON.stringify(actual)
  const e = JSON.stringify(expected)
  if (a !== e) throw new Error(`${what} differ:\nFHIR ${a}\nREST ${e}`)
}
