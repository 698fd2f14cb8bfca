import { Hl7Message } from '@medplum/core'
import { test } from 'tap'
import { type AdtSettings, readAdt, unescapeValue, type WardMessage } from '../../domain/adt-message.js'
import { type Occupant, planWardChange, type WardState } from '../../domain/adt-ward.js'
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

test('the plan of each event, and each reason to park', async (t) => {
  const a = occupant('a', 'B1')
  const other = occupant('x', 'B2')
  t.same(planWardChange(msg('A01'), state([]), true).kind, 'apply')
  t.match(planWardChange(msg('A01'), state([a], [a]), true), { kind: 'park', code: 'already-admitted' })
  t.match(
    planWardChange(msg('A01', { location: { facility: 'F', room: null, bed: 'B2' } }), state([], [other]), true),
    {
      kind: 'park',
      code: 'bed-occupied',
    },
  )
  const move = msg('A02', { location: { facility: 'F', room: null, bed: 'B3' } })
  t.match(planWardChange(move, state([a], [a]), true), {
    kind: 'apply',
    changes: [
      { op: 'discharge', id: 'a' },
      { op: 'admit', location: { bed: 'B3' } },
    ],
  })
  t.match(planWardChange(move, state([]), true), { kind: 'park', code: 'not-admitted' })
  t.match(planWardChange(msg('A03'), state([]), true), { kind: 'park', code: 'not-admitted' })
  t.match(planWardChange(msg('A03'), state([a]), true), { changes: [{ op: 'discharge', id: 'a', at: T0 + 1000 }] })
  t.match(planWardChange(msg('A08', { provider: 'D', location: null }), state([a]), true), {
    changes: [{ op: 'provider', id: 'a', provider: 'D' }],
  })
  t.match(planWardChange({ ...move, event: 'A08' }, state([a]), true), {
    changes: [{ op: 'discharge' }, { op: 'admit' }],
  })
  t.same(planWardChange({ ...move, event: 'A08' }, state([a]), false), { kind: 'apply', changes: [] })
  t.match(planWardChange(msg('A11'), state([a]), true), { changes: [{ op: 'remove', id: 'a' }] })
  const moved = occupant('m', 'B3')
  const left = { ...a, dischargedAt: T0 + 500 }
  t.match(planWardChange(msg('A11'), state([moved, left]), true), { kind: 'park', code: 'nothing-to-cancel' })
  t.match(planWardChange(msg('A12'), state([moved, left]), true), {
    changes: [
      { op: 'remove', id: 'm' },
      { op: 'reopen', id: 'a' },
    ],
  })
  t.match(planWardChange(msg('A12'), state([moved, left], [moved, occupant('y', 'B1')]), true), {
    kind: 'park',
    code: 'bed-taken-since',
  })
  t.match(planWardChange(msg('A13'), state([left]), true), { changes: [{ op: 'reopen', id: 'a' }] })
  t.match(planWardChange(msg('A13'), state([left], [occupant('y', 'B1')]), true), { code: 'bed-taken-since' })
  t.match(planWardChange(msg('A13'), state([a]), true), { code: 'not-discharged' })
  t.match(planWardChange(msg('A13'), state([]), true), { code: 'nothing-to-cancel' })
  t.match(planWardChange(msg('A03', { eventAt: T0 }), state([a], [], T0 + 1), true), { code: 'out-of-order' })
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
