import { Hl7Message } from '@medplum/core'
import { test } from 'tap'
import { type AdtSettings, readAdt, type WardMessage } from '../../domain/adt-message.js'
import { type PatientEventState, planAdt } from '../../domain/adt-patient-events.js'
import type { Occupant } from '../../domain/adt-ward.js'
import { adt } from './messages.js'

const settings: AdtSettings = { defaultFacility: 'DEF', patientIdType: 'MR', timeZone: 'UTC', transferOnA08: true }

function read(text: string): WardMessage {
  const reading = readAdt(Hl7Message.parse(text), settings)
  if (reading.kind !== 'ward') throw new Error(`expected a ward event, got ${JSON.stringify(reading)}`)
  return reading.message
}

const stay = (
  id: string,
  encounter: string,
  bed: string,
  extra: Partial<Occupant> = {},
): Occupant & { encounter: string } => ({
  id,
  encounter,
  facility: 'F',
  room: null,
  bed,
  occupiedBy: `P-${encounter}`,
  provider: null,
  occupiedAt: 0,
  dischargedAt: null,
  ...extra,
})

function state(
  stays: (Occupant & { encounter: string })[],
  encounter: string,
  exclusiveBeds = true,
): PatientEventState {
  const of = (e: string) => stays.filter((s) => s.encounter === e)
  return {
    encounterOccupants: of(encounter),
    activeOnBed: (l) =>
      stays.find((s) => s.bed === l.bed && s.facility === l.facility && s.dischargedAt === null) ?? null,
    lastAppliedAt: null,
    exclusiveBeds,
    dischargedAfter: (l, at, except) =>
      stays.find(
        (s) =>
          s.bed === l.bed &&
          s.facility === l.facility &&
          s.dischargedAt !== null &&
          s.dischargedAt > at &&
          s.id !== except,
      ) ?? null,
    staysOf: of,
    lastAppliedOf: () => null,
    staysOfPatient: (p, f) => stays.filter((s) => s.occupiedBy === p && s.facility === f),
  }
}

test('an A17 reads both groups; an A40 each PID/MRG pair, MRG-1 by its identifier type; an A50 MRG-5', async (t) => {
  const a17 = read(
    adt({
      event: 'A17',
      control: 'C',
      encounter: 'E1',
      patient: 'P1',
      bed: 'B2',
      facility: 'F',
      provider: 'DR1',
      swap: { patient: 'P2', encounter: 'E2', bed: 'B1', room: 'R1' },
    }),
  )
  t.match(a17, {
    event: 'A17',
    encounter: 'E1',
    patient: 'P1',
    location: { facility: 'F', bed: 'B2' },
    provider: 'DR1',
  })
  t.same(a17.swapWith, {
    encounter: 'E2',
    patient: 'P2',
    location: { facility: 'F', room: 'R1', bed: 'B1' },
    provider: null,
  })
  const a40 = read(
    [
      'MSH|^~\\&|HIS|GEN|WARD|FS|20260105103000||ADT^A40^ADT_A39|C|P|2.5.1',
      'EVN|A40|20260105103000',
      'PID|1||NEW1^^^H^MR',
      'MRG|X9^^^H^PI~OLD1^^^H^MR',
      'PID|1||NEW2^^^H^MR',
      'MRG|OLD2^^^H^MR',
    ].join('\r'),
  )
  t.same(a40.merges, [
    { from: 'OLD1', to: 'NEW1' },
    { from: 'OLD2', to: 'NEW2' },
  ])
  t.equal(a40.encounter, '', 'no visit')
  t.equal(a40.facility, 'DEF', 'no PV1: the default facility')
  t.equal(read(adt({ event: 'A50', control: 'C', encounter: 'V2', mrg: { visit: 'V1' } })).previousEncounter, 'V1')
})

test('an A17 exchanges the two beds whichever way PV1-3 names them; a shared bed or a third bed parks', async (t) => {
  const stays = [stay('a', 'E1', 'B1', { provider: 'DR1' }), stay('b', 'E2', 'B2')]
  const swap = (bed1: string, bed2: string) =>
    read(
      adt({
        event: 'A17',
        control: 'C',
        encounter: 'E1',
        patient: 'P-E1',
        bed: bed1,
        facility: 'F',
        at: '202601051000',
        swap: { patient: 'P-E2', encounter: 'E2', bed: bed2, provider: 'DR2' },
      }),
    )
  const goes = planAdt(swap('B2', 'B1'), state(stays, 'E1'), true)
  const stays_ = planAdt(swap('B1', 'B2'), state(stays, 'E1'), true)
  t.same(goes, stays_)
  const at = Date.UTC(2026, 0, 5, 10)
  t.same(goes, {
    kind: 'apply',
    changes: [
      { op: 'discharge', id: 'a', at },
      { op: 'discharge', id: 'b', at },
      {
        op: 'admit',
        location: { facility: 'F', room: null, bed: 'B2' },
        encounter: 'E1',
        occupiedBy: 'P-E1',
        provider: 'DR1',
        occupiedAt: at,
      },
      {
        op: 'admit',
        location: { facility: 'F', room: null, bed: 'B1' },
        encounter: 'E2',
        occupiedBy: 'P-E2',
        provider: 'DR2',
        occupiedAt: at,
      },
    ],
  })
  t.match(planAdt(swap('B3', 'B1'), state(stays, 'E1'), true), { kind: 'park', code: 'not-in-bed', reason: /E2/ })
  const shared = [stay('a', 'E1', 'B1'), stay('b', 'E2', 'B1')]
  t.match(planAdt(swap('B1', 'B2'), state(shared, 'E1', false), true), { kind: 'park', code: 'not-in-bed' })
})
