import { Hl7Message } from '@medplum/core'
import { test } from 'tap'
import { type AdtSettings, readAdt, unescapeValue, type WardMessage } from '../../domain/adt-message.js'
import { facilitiesChanged, type Occupant, planWardChange, planWithin, type WardState } from '../../domain/adt-ward.js'
import { parseHl7Time } from '../../domain/hl7-time.js'
import { adt } from './messages.js'

const settings: AdtSettings = {
  defaultFacility: 'DEFAULT',
  patientIdType: 'MR',
  timeZone: 'Europe/Berlin',
  transferOnA08: true,
}

function read(text: string, s = settings) {
  return readAdt(Hl7Message.parse(text), s)
}

function wardMessage(text: string): WardMessage {
  const reading = read(text)
  if (reading.kind !== 'ward') throw new Error(`expected a ward event, got ${JSON.stringify(reading)}`)
  return reading.message
}

test('an A01 in v2.5.1 and in v2.3, with CR or CRLF, reads the same ward fields', async (t) => {
  for (const version of ['2.3', '2.5.1'] as const) {
    for (const segmentEnd of ['\r', '\r\n'] as const) {
      const m = wardMessage(
        adt({
          event: 'A01',
          control: 'C1',
          encounter: 'E-1',
          facility: 'FAC1',
          room: 'R2',
          bed: 'B3',
          provider: 'DR7',
          version,
          segmentEnd,
          zSegment: true,
        }),
      )
      t.same(
        m,
        {
          event: 'A01',
          encounter: 'E-1',
          patient: 'P-1',
          location: { facility: 'FAC1', room: 'R2', bed: 'B3' },
          facility: 'FAC1',
          provider: 'DR7',
          // 10:30 in Berlin in January is 09:30 UTC.
          eventAt: Date.UTC(2026, 0, 5, 9, 30),
          dischargedAt: Date.UTC(2026, 0, 5, 9, 30),
        },
        `v${version} ${JSON.stringify(segmentEnd)}`,
      )
    }
  }
})

test('the PID-3 repetition of HL7_PATIENT_ID_TYPE names the patient, else the first', async (t) => {
  const pid3 = 'X-9^^^GENERAL^PI~MRN-4^^^GENERAL^MR'
  t.equal(wardMessage(adt({ event: 'A01', control: 'C', encounter: 'E', bed: 'B', pid3 })).patient, 'MRN-4')
  const other = read(adt({ event: 'A01', control: 'C', encounter: 'E', bed: 'B', pid3 }), {
    ...settings,
    patientIdType: 'NH',
  })
  t.equal(other.kind === 'ward' && other.message.patient, 'X-9')
})

test('escape sequences in fields are resolved; the default facility fills an empty PV1-3.4', async (t) => {
  const m = wardMessage(adt({ event: 'A01', control: 'C', encounter: 'E\\T\\1', bed: 'B\\F\\2', room: 'R\\X41\\' }))
  t.same(m.location, { facility: 'DEFAULT', room: 'RA', bed: 'B|2' })
  t.equal(m.encounter, 'E&1')
  t.equal(unescapeValue('a\\S\\b\\R\\c\\E\\d\\.br\\e'), 'a^b~c\\de')
})

test('event time: EVN-6, else EVN-2; an offset wins over the zone; PV1-45 is the discharge time', async (t) => {
  const m = wardMessage(
    adt({
      event: 'A03',
      control: 'C',
      encounter: 'E',
      at: '20260705103000',
      occurredAt: '202607051000-0500',
      dischargedAt: '20260705095500',
    }),
  )
  t.equal(m.eventAt, Date.UTC(2026, 6, 5, 15, 0))
  // Summer in Berlin: UTC+2.
  t.equal(m.dischargedAt, Date.UTC(2026, 6, 5, 7, 55))
  t.equal(parseHl7Time('20260231', 'UTC'), null, 'no 31 February')
  t.equal(parseHl7Time('2026010512', 'UTC'), Date.UTC(2026, 0, 5, 12))
  t.equal(parseHl7Time('20260105120000.25+0000', 'UTC'), Date.UTC(2026, 0, 5, 12, 0, 0, 250))
  // 02:30 on the spring-forward night does not exist in Berlin; it is read one way, not thrown.
  t.type(parseHl7Time('20260329023000', 'Europe/Berlin'), 'number')
})

test('timestamps in several zones, read in turn, each keep their own zone (one formatter per zone)', async (t) => {
  const zones: [string, number][] = [
    ['Europe/Berlin', 1],
    ['America/New_York', -5],
    ['Asia/Kolkata', 5.5],
    ['UTC', 0],
  ]
  // More zones than the formatters kept, twice over: the bound clears them, results stay right.
  const many = Intl.supportedValuesOf('timeZone').slice(0, 40)
  for (let round = 0; round < 2; round++) {
    for (const [zone, hours] of zones)
      t.equal(parseHl7Time('20260105103000', zone), Date.UTC(2026, 0, 5, 10, 30) - hours * 3_600_000, zone)
    for (const zone of many) t.type(parseHl7Time('20260105103000', zone), 'number', zone)
  }
  // Summer time in the same zone, after winter: the offset is the instant's, not the first one read.
  t.equal(parseHl7Time('20260705103000', 'Europe/Berlin'), Date.UTC(2026, 6, 5, 8, 30))
  t.throws(() => parseHl7Time('20260105103000', 'Not/AZone'), RangeError, 'an unknown zone still throws')
  t.throws(() => parseHl7Time('20260105103000', 'Not/AZone'), RangeError, 'every time (it is not kept)')
})

test('a message that can never be applied is a rejection naming the field', async (t) => {
  const cases: [string, string][] = [
    [adt({ event: 'A01', control: 'C', encounter: 'E' }), 'PV1-3'],
    [adt({ event: 'A01', control: 'C', bed: 'B' }), 'PV1-19'],
    [adt({ event: 'A01', control: 'C', encounter: 'E', bed: 'B', pid3: '' }), 'PID-3'],
    [adt({ event: 'A01', control: '', encounter: 'E', bed: 'B' }), 'MSH-10'],
    [adt({ event: 'R01', control: 'C', type: 'ORU^R01' }), 'MSH-9'],
    [adt({ event: 'A03', control: 'C', encounter: 'E', occurredAt: 'yesterday' }), 'EVN-6'],
    [adt({ event: 'A03', control: 'C', encounter: 'E', dischargedAt: '2026-01-01' }), 'PV1-45'],
    [`${adt({ event: 'A03', control: 'C', encounter: 'E' }).split('\r')[0]}`, 'PV1'],
  ]
  for (const [text, field] of cases) {
    const reading = read(text)
    t.equal(reading.kind, 'rejected', field)
    if (reading.kind === 'rejected') t.equal(reading.rejection.field, field)
  }
})

test('a ward field longer than the API takes is a rejection naming it; at the limit it reads', async (t) => {
  const max = 200
  const long = 'x'.repeat(max + 1)
  const base = { event: 'A01', control: 'C', encounter: 'E', bed: 'B', facility: 'F', room: 'R', provider: 'D' }
  const cases: [Partial<Parameters<typeof adt>[0]>, string][] = [
    [{ bed: long }, 'PV1-3.3'],
    [{ room: long }, 'PV1-3.2'],
    [{ facility: long }, 'PV1-3.4'],
    [{ encounter: long }, 'PV1-19'],
    [{ patient: long }, 'PID-3'],
    [{ provider: long }, 'PV1-7'],
  ]
  for (const [fields, field] of cases) {
    const reading = read(adt({ ...base, ...fields }))
    t.match(
      reading,
      { kind: 'rejected', rejection: { field, code: 102, reason: new RegExp(`longer than ${max}`) } },
      field,
    )
  }
  // Counted in characters as the API counts: 200 characters outside the BMP are 400 UTF-16 units.
  const m = wardMessage(adt({ ...base, bed: '\u{1F6CF}'.repeat(max), encounter: 'e'.repeat(max) }))
  t.equal([...(m.location?.bed ?? '')].length, max)
  t.equal(m.encounter.length, max)
})

test('other ADT events are ignored, not rejected', async (t) => {
  t.equal(read(adt({ event: 'A04', control: 'C', encounter: 'E', bed: 'B' })).kind, 'ignored')
  t.equal(read(adt({ event: 'A31', control: 'C' })).kind, 'ignored')
})

const T0 = Date.UTC(2026, 0, 1)

function occupant(id: string, bed: string, over: Partial<Occupant> = {}): Occupant {
  return {
    id,
    facility: 'F',
    room: null,
    bed,
    occupiedBy: 'P',
    provider: null,
    occupiedAt: T0,
    dischargedAt: null,
    ...over,
  }
}

function state(encounterOccupants: Occupant[], beds: Occupant[] = [], lastAppliedAt: number | null = null): WardState {
  return {
    encounterOccupants,
    activeOnBed: (l) =>
      beds.find((o) => o.facility === l.facility && o.bed === l.bed && o.dischargedAt === null) ?? null,
    lastAppliedAt,
    exclusiveBeds: true,
    dischargedAfter: (l, at, except) =>
      beds.find((o) => o.facility === l.facility && o.bed === l.bed && o.id !== except && (o.dischargedAt ?? 0) > at) ??
      null,
  }
}

function msg(event: WardMessage['event'], over: Partial<WardMessage> = {}): WardMessage {
  return {
    event,
    encounter: 'E',
    patient: 'P',
    location: { facility: 'F', room: null, bed: 'B1' },
    facility: 'F',
    provider: null,
    eventAt: T0 + 1000,
    dischargedAt: T0 + 1000,
    ...over,
  }
}

/** An apply plan's changes as they are; a park by its code only (its reason is text for people). */
function planOf(m: WardMessage, s: WardState, transferOnA08 = true) {
  const plan = planWardChange(m, s, transferOnA08)
  return plan.kind === 'park' ? { park: plan.code } : plan.changes
}

const at = T0 + 1000
const admitted = (bed: string, over: Record<string, unknown> = {}) => ({
  op: 'admit',
  location: { facility: 'F', room: null, bed },
  encounter: 'E',
  occupiedBy: 'P',
  provider: null,
  occupiedAt: at,
  ...over,
})

test('the plan of each event, and each reason to park', async (t) => {
  const a = occupant('a', 'B1')
  const other = occupant('x', 'B2')
  t.strictSame(planOf(msg('A01'), state([])), [admitted('B1')])
  t.strictSame(planOf(msg('A01'), state([a], [a])), { park: 'already-admitted' })
  t.strictSame(planOf(msg('A01', { location: { facility: 'F', room: null, bed: 'B2' } }), state([], [other])), {
    park: 'bed-occupied',
  })
  const move = msg('A02', { location: { facility: 'F', room: null, bed: 'B3' } })
  t.strictSame(planOf(move, state([a], [a])), [{ op: 'discharge', id: 'a', at }, admitted('B3')])
  t.strictSame(planOf(move, state([])), { park: 'not-admitted' })
  t.strictSame(planOf(msg('A03'), state([])), { park: 'not-admitted' })
  t.strictSame(planOf(msg('A03'), state([a])), [{ op: 'discharge', id: 'a', at }])
  t.strictSame(planOf(msg('A03', { dischargedAt: at - 5 }), state([a])), [{ op: 'discharge', id: 'a', at: at - 5 }])
  t.strictSame(planOf(msg('A08', { provider: 'D', location: null }), state([a])), [
    { op: 'provider', id: 'a', provider: 'D' },
  ])
  t.strictSame(planOf(msg('A08', { provider: null, location: null }), state([a])), [])
  t.strictSame(planOf({ ...move, event: 'A08' }, state([a])), [{ op: 'discharge', id: 'a', at }, admitted('B3')])
  t.strictSame(planOf({ ...move, event: 'A08' }, state([a]), false), [])
  t.strictSame(planOf(msg('A11'), state([a])), [{ op: 'remove', id: 'a' }])
  const moved = occupant('m', 'B3')
  const left = { ...a, dischargedAt: T0 + 500 }
  t.strictSame(planOf(msg('A11'), state([moved, left])), { park: 'nothing-to-cancel' })
  t.strictSame(planOf(msg('A12'), state([moved, left])), [
    { op: 'remove', id: 'm' },
    { op: 'reopen', id: 'a' },
  ])
  t.strictSame(planOf(msg('A12'), state([moved, left], [moved, occupant('y', 'B1')])), { park: 'bed-taken-since' })
  t.strictSame(planOf(msg('A13'), state([left])), [{ op: 'reopen', id: 'a' }])
  t.strictSame(planOf(msg('A13'), state([left], [occupant('y', 'B1')])), { park: 'bed-taken-since' })
  t.strictSame(planOf(msg('A13'), state([a])), { park: 'not-discharged' })
  t.strictSame(planOf(msg('A13'), state([])), { park: 'nothing-to-cancel' })
})

test("a transfer takes the new provider and patient when the message names them, else the stay's", async (t) => {
  const a = occupant('a', 'B1', { provider: 'D1', occupiedBy: 'P-OLD' })
  const to = { facility: 'F', room: null, bed: 'B3' }
  for (const event of ['A02', 'A08'] as const) {
    t.strictSame(planOf(msg(event, { location: to, provider: 'D2', patient: 'P-NEW' }), state([a])), [
      { op: 'discharge', id: 'a', at },
      admitted('B3', { provider: 'D2', occupiedBy: 'P-NEW' }),
    ])
    t.strictSame(planOf(msg(event, { location: to, provider: null, patient: null }), state([a])), [
      { op: 'discharge', id: 'a', at },
      admitted('B3', { provider: 'D1', occupiedBy: 'P-OLD' }),
    ])
  }
})

test('an event at the time of the last one applied is in order; one before it is out of order', async (t) => {
  const a = occupant('a', 'B1')
  t.strictSame(planOf(msg('A03', { eventAt: at, dischargedAt: at }), state([a], [], at)), [
    { op: 'discharge', id: 'a', at },
  ])
  t.strictSame(planOf(msg('A03', { eventAt: at - 1 }), state([a], [], at)), { park: 'out-of-order' })
})

test('a plan filed under one facility is parked when it would change a stay in another', async (t) => {
  const inG = occupant('g', 'B1', { facility: 'G' })
  const plan = planWithin(msg('A03'), state([inG]), true, 'F')
  t.equal(plan.kind === 'park' && plan.code, 'other-facility')
  t.notMatch(plan.kind === 'park' ? plan.reason : '', /\bG\b/, 'the other facility is not named')
  t.strictSame(facilitiesChanged(planWardChange(msg('A03'), state([inG]), true), state([inG])), ['G'])
  t.strictSame(planWithin(msg('A03'), state([inG]), true, 'G'), {
    kind: 'apply',
    changes: [{ op: 'discharge', id: 'g', at }],
  })
  t.strictSame(
    facilitiesChanged(
      planWardChange(msg('A02', { location: { facility: 'F', room: null, bed: 'B3' } }), state([inG]), true),
      state([inG]),
    ),
    ['G', 'F'],
    'a transfer between facilities changes both',
  )
})

test("an admission or transfer older than the bed's last discharge is parked: no two stays of a bed overlap", async (t) => {
  const before = occupant('y', 'B1', { dischargedAt: T0 + 500 })
  const after = occupant('z', 'B1', { dischargedAt: T0 + 2000 })
  t.match(planWardChange(msg('A01'), state([], [before]), true), { kind: 'apply' }, 'freed before the event')
  t.match(
    planWardChange(msg('A01', { eventAt: T0 + 2000 }), state([], [after]), true),
    { kind: 'apply' },
    'freed at it',
  )
  t.match(planWardChange(msg('A01'), state([], [before, after]), true), {
    kind: 'park',
    code: 'bed-taken-since',
    reason:
      /bed B1 of F was occupied until 2026-01-01T00:00:02.000Z \(occupant z\), after this event's time 2026-01-01T00:00:01.000Z/,
  })
  const a = occupant('a', 'B2')
  const move = msg('A02', { location: { facility: 'F', room: null, bed: 'B1' } })
  t.match(planWardChange(move, state([a], [a, after]), true), { kind: 'park', code: 'bed-taken-since' })
  t.match(planWardChange({ ...move, event: 'A08' }, state([a], [a, after]), true), { code: 'bed-taken-since' })
  const shared = { ...state([], [after]), exclusiveBeds: false }
  t.match(planWardChange(msg('A01'), shared, true), { kind: 'apply' }, 'BED_POLICY=shared: beds are shared anyway')
})
