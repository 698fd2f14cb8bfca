import { Hl7Message } from '@medplum/core'
import { test } from 'tap'
import { type BedEventState, planBedEvent } from '../../domain/adt-bed-events.js'
import { type AdtSettings, type Location, readAdt, type WardMessage } from '../../domain/adt-message.js'
import type { Occupant } from '../../domain/adt-ward.js'
import { bedStateNotification } from '../../domain/bed-state-notes.js'
import { expectationLive, shownState } from '../../domain/bed-states.js'
import { adt } from './messages.js'

// What the bed events say and mean, without sockets or a database (docs/ADT.md, "Bed states").

const settings: AdtSettings = { defaultFacility: 'DEFAULT', patientIdType: 'MR', timeZone: 'UTC', transferOnA08: true }
const read = (text: string) => readAdt(Hl7Message.parse(text), settings)

test('A15 expects the patient in PV2-1 when it names a bed, else in PV1-3', async (t) => {
  const base = adt({ event: 'A15', control: 'C1', encounter: 'E1', facility: 'F', room: 'R1', bed: 'B1' })
  const withPv2 = read(`${base}\rPV2|W2^R9^B9^G`)
  t.match(withPv2, { kind: 'ward', message: { event: 'A15', location: { facility: 'G', room: 'R9', bed: 'B9' } } })
  t.match(read(`${base}\rPV2|`), { kind: 'ward', message: { location: { facility: 'F', bed: 'B1' } } })
  t.match(read(`${base}\rPV2|W2^R9^^G`), { message: { location: { bed: 'B1' } } }, 'PV2-1 without a bed: PV1-3')
  const noBed = adt({ event: 'A15', control: 'C2', encounter: 'E1', facility: 'F' })
  t.match(read(noBed), { kind: 'rejected', rejection: { field: 'PV1-3', code: 101 } })
  t.match(read(`${noBed}\rPV2|W2^R9^B9`), { message: { location: { facility: 'DEFAULT', bed: 'B9' } } })
})

test('A20 reads NPU-1 and NPU-2 against table 0116', async (t) => {
  const a20 = (npu: string) =>
    read(`MSH|^~\\&|HIS|H|WARD|FS|20260105103000||ADT^A20^ADT_A20|C1|P|2.5.1\rEVN|A20|20260105103000\r${npu}`)
  t.match(a20('NPU|W1^R1^B1^F|K'), {
    kind: 'ward',
    message: { event: 'A20', encounter: '', bedStatus: 'K', location: { facility: 'F', room: 'R1', bed: 'B1' } },
  })
  t.match(a20('NPU|W1^R1^B1|C'), { message: { location: { facility: 'DEFAULT' } } })
  t.match(a20('NPU|W1^R1^B1^F|Z'), { kind: 'rejected', rejection: { field: 'NPU-2', code: 103 } })
  t.match(a20('NPU|W1^R1^B1^F|'), { kind: 'rejected', rejection: { field: 'NPU-2', code: 101 } })
  t.match(a20('NPU|W1^R1^^F|C'), { kind: 'rejected', rejection: { field: 'NPU-1', code: 101 } })
  t.match(a20('ZZZ|x'), { kind: 'rejected', rejection: { field: 'NPU', code: 100 } })
})

const at = 1_000_000
const stay: Occupant = {
  id: 'S1',
  facility: 'F',
  room: null,
  bed: 'B1',
  occupiedBy: 'P',
  provider: null,
  occupiedAt: 1,
  dischargedAt: null,
}
function message(event: string, extra: Partial<WardMessage> = {}): WardMessage {
  return {
    event: event as WardMessage['event'],
    encounter: 'E1',
    patient: null,
    location: null,
    facility: 'F',
    provider: null,
    eventAt: at,
    dischargedAt: at,
    ...extra,
  }
}
function state(extra: Partial<BedEventState> = {}): BedEventState {
  return {
    encounterOccupants: [stay],
    activeOnBed: () => null,
    lastAppliedAt: null,
    exclusiveBeds: true,
    dischargedAfter: () => null,
    knownBed: () => true,
    housekeepingSince: () => null,
    expectations: [],
    markSince: () => null,
    ...extra,
  }
}
const bed2: Location = { facility: 'F', room: null, bed: 'B2' }

test('each bed event: its change, or its reason to park', async (t) => {
  const code = (event: string, s: BedEventState, extra: Partial<WardMessage> = {}) => {
    const plan = planBedEvent(message(event, extra), s)
    return plan.kind === 'park' ? plan.code : plan.changes.map((c) => c.op).join(',')
  }
  const none = state({ encounterOccupants: [] })
  const away = state({ markSince: (_, mark) => (mark === 'on-leave' ? 1 : null) })
  const leaving = state({ markSince: (_, mark) => (mark === 'discharge-expected' ? 1 : null) })
  const cases: [string, BedEventState, Partial<WardMessage>, string][] = [
    ['A14', none, { location: bed2 }, 'expect'],
    ['A14', state(), { location: bed2 }, 'already-admitted'],
    ['A27', state({ expectations: ['admission'] }), {}, 'unexpect'],
    ['A27', state({ expectations: ['transfer'] }), {}, 'nothing-to-cancel'],
    ['A15', state(), { location: bed2 }, 'expect'],
    ['A15', state(), { location: { facility: 'F', room: null, bed: 'B1' } }, 'no-pending-location'],
    ['A15', none, { location: bed2 }, 'not-admitted'],
    ['A26', state({ expectations: ['transfer'] }), {}, 'unexpect'],
    ['A26', state(), {}, 'nothing-to-cancel'],
    ['A16', state(), {}, 'mark'],
    ['A16', none, {}, 'not-admitted'],
    ['A25', leaving, {}, 'mark'],
    ['A25', state(), {}, 'nothing-to-cancel'],
    ['A21', state(), {}, 'mark'],
    ['A21', away, {}, 'already-on-leave'],
    ['A22', away, {}, 'mark'],
    ['A22', state(), {}, 'not-on-leave'],
    ['A52', away, {}, 'mark'],
    ['A52', state(), {}, 'nothing-to-cancel'],
    ['A53', state(), {}, 'mark'],
    ['A53', away, {}, 'nothing-to-cancel'],
    ['A21', state({ lastAppliedAt: at + 1 }), {}, 'out-of-order'],
    ['A20', state(), { location: bed2, bedStatus: 'C', encounter: '' }, 'housekeeping'],
    ['A20', state({ knownBed: () => false }), { location: bed2, bedStatus: 'C' }, 'unknown-bed'],
    ['A20', state({ activeOnBed: () => stay }), { location: bed2, bedStatus: 'U' }, 'bed-occupied'],
    ['A20', state({ activeOnBed: () => stay }), { location: bed2, bedStatus: 'O' }, 'housekeeping'],
    ['A20', state({ housekeepingSince: () => at + 1 }), { location: bed2, bedStatus: 'H' }, 'out-of-order'],
  ]
  for (const [event, s, extra, expected] of cases) t.equal(code(event, s, extra), expected, `${event} → ${expected}`)
})

test('the state a bed shows', async (t) => {
  const free = { active: [], housekeeping: null, expected: false }
  t.equal(shownState(free), 'free')
  t.equal(shownState({ ...free, expected: true }), 'expected')
  t.equal(shownState({ ...free, expected: true, housekeeping: 'closed' }), 'closed', 'a closed bed expects no one')
  t.equal(shownState({ ...free, active: [{ onLeave: false }], housekeeping: 'isolated' }), 'occupied')
  t.equal(shownState({ ...free, active: [{ onLeave: true }] }), 'on-leave')
  t.equal(shownState({ ...free, active: [{ onLeave: true }, { onLeave: false }] }), 'occupied', 'one still here')
  t.ok(expectationLive(0, 3_599_999, 1))
  t.notOk(expectationLive(0, 3_600_000, 1))
  t.ok(expectationLive(0, Number.MAX_SAFE_INTEGER, 0), '0: no limit')
})

test('a change of a bed state tells the ward what changed', async (t) => {
  const free = { facility: 'F', bed: 'B1', state: 'free' as const }
  const mark = [{ wardOccupantId: 'S1', since: 1 }]
  const occupied = { ...free, state: 'occupied' as const }
  const cases: [object, object, string | null][] = [
    [free, { ...free, state: 'closed', housekeeping: { state: 'closed', since: 1, setBy: 'n' } }, 'bed-state-set'],
    [{ ...free, state: 'closed', housekeeping: { state: 'closed', since: 1, setBy: 'n' } }, free, 'bed-state-cleared'],
    [
      free,
      { ...free, state: 'expected', expected: { encounter: 'E', kind: 'transfer', since: 1 } },
      'patient-expected',
    ],
    [
      { ...free, state: 'expected', expected: { encounter: 'E', kind: 'transfer', since: 1 } },
      free,
      'patient-expected-cancelled',
    ],
    [occupied, { ...occupied, state: 'on-leave', onLeave: mark }, 'patient-on-leave'],
    [{ ...occupied, state: 'on-leave', onLeave: mark }, occupied, 'patient-back'],
    [occupied, { ...occupied, dischargeExpected: mark }, 'discharge-expected'],
    [{ ...occupied, dischargeExpected: mark }, occupied, 'discharge-not-expected'],
    [free, free, null],
  ]
  for (const [before, after, code] of cases) {
    const note = bedStateNotification(before as never, after as never, 5)
    t.equal(note?.code ?? null, code, code ?? 'no change, no notification')
    if (note) t.match(note, { facility: 'F', type: 'ward', createdAt: 5, meta: { bed: 'B1' } })
  }
  t.match(
    bedStateNotification(
      { bed: 'B1', state: 'free' },
      { bed: 'B1', state: 'expected', expected: { encounter: 'E', kind: 'admission', since: 1 } },
      0,
    ),
    {
      facility: null,
      unboundOnly: true,
    },
    'a bed without a facility: for the tokens without one only',
  )
})
