/**
 * What the ADT events about beds mean for the ward (docs/ADT.md, "Bed states"): pending
 * admissions and transfers (a bed expects a patient), pending discharges, leaves of absence, and
 * A20's bed status. None of them moves a patient: they mark beds and stays. Pure, like
 * domain/adt-ward.ts: the caller reads the state and applies the changes in one transaction.
 */
import type { HousekeepingState } from '../schemas/beds.js'
import type { Location, WardMessage } from './adt-message.js'
import type { Occupant, ParkCode, WardState } from './adt-ward.js'
import { TABLE_0116 } from './bed-states.js'

export const BED_EVENTS = ['A14', 'A15', 'A16', 'A20', 'A21', 'A22', 'A25', 'A26', 'A27', 'A52', 'A53'] as const
export type BedEventCode = (typeof BED_EVENTS)[number]
export const isBedEvent = (code: string): code is BedEventCode => (BED_EVENTS as readonly string[]).includes(code)

/** The park codes of these events beyond those of domain/adt-ward.ts. */
export const BED_PARK_CODES = ['unknown-bed', 'not-on-leave', 'already-on-leave', 'no-pending-location'] as const

export type StayMarkKind = 'on-leave' | 'discharge-expected'
type ExpectationKind = 'admission' | 'transfer'

export type BedChange =
  | { op: 'housekeeping'; location: Location; state: HousekeepingState | null; at: number }
  | { op: 'expect'; location: Location; encounter: string; kind: ExpectationKind; at: number }
  | { op: 'unexpect'; encounter: string; kind: ExpectationKind }
  | { op: 'mark'; stay: Occupant; mark: StayMarkKind; at: number | null }

export interface BedEventState extends WardState {
  /** Whether the ward knows the bed (had a stay, is listed, is expected). */
  knownBed(location: Location): boolean
  /** Since when the bed has its housekeeping state; null: none. */
  housekeepingSince(location: Location): number | null
  /** The kinds of the encounter's expectations. */
  expectations: ExpectationKind[]
  /** Since when a stay has a mark; null: not marked. */
  markSince(occupant: string, mark: StayMarkKind): number | null
}

export type BedPlan = { kind: 'apply'; changes: BedChange[] } | { kind: 'park'; code: ParkCode; reason: string }

const park = (code: ParkCode, reason: string): BedPlan => ({ kind: 'park', code, reason })
const apply = (...changes: BedChange[]): BedPlan => ({ kind: 'apply', changes })
const where = (l: Location) => (l.facility === null ? `bed ${l.bed}` : `bed ${l.bed} of ${l.facility}`)
const sameBed = (a: Location, b: Occupant) => a.facility === b.facility && a.bed === b.bed

/** A20: NPU-2 sets the bed's housekeeping state (C, H, K, I) or clears it (O, U). */
function bedStatus(m: WardMessage, state: BedEventState): BedPlan {
  const location = m.location as Location
  if (!state.knownBed(location))
    return park(
      'unknown-bed',
      `${where(location)} is not a bed of the ward; list it (facility-service beds add), then retry`,
    )
  const since = state.housekeepingSince(location)
  if (since !== null && m.eventAt < since)
    return park(
      'out-of-order',
      `the A20 (${new Date(m.eventAt).toISOString()}) is older than ${where(location)}'s state (since ${new Date(since).toISOString()})`,
    )
  const code = m.bedStatus as string
  const active = state.activeOnBed(location)
  // U says the bed is empty: the ward frees a bed by a discharge (A03), never by a status.
  if (code === 'U' && active)
    return park(
      'bed-occupied',
      `${where(location)} holds an active stay (occupant ${active.id}); an A20 U cannot free it`,
    )
  return apply({ op: 'housekeeping', location, state: TABLE_0116[code] ?? null, at: m.eventAt })
}

function expect(m: WardMessage, active: Occupant | undefined): BedPlan {
  const location = m.location as Location
  if (m.event === 'A14') {
    if (active) return park('already-admitted', `encounter ${m.encounter} is already in ${where(active as Location)}`)
    return apply({ op: 'expect', location, encounter: m.encounter, kind: 'admission', at: m.eventAt })
  }
  if (!active) return park('not-admitted', `encounter ${m.encounter} has no active occupant`)
  if (sameBed(location, active))
    return park(
      'no-pending-location',
      `the A15 names ${where(location)}, where encounter ${m.encounter} already is; the pending location goes in PV2-1`,
    )
  return apply({ op: 'expect', location, encounter: m.encounter, kind: 'transfer', at: m.eventAt })
}

function cancelExpectation(m: WardMessage, state: BedEventState, kind: ExpectationKind): BedPlan {
  if (!state.expectations.includes(kind))
    return park('nothing-to-cancel', `encounter ${m.encounter} has no pending ${kind} to cancel`)
  return apply({ op: 'unexpect', encounter: m.encounter, kind })
}

/** A mark set (`to` true) or cleared, parked when the stay is not as the event expects. */
function toggle(m: WardMessage, state: BedEventState, stay: Occupant, mark: StayMarkKind, to: boolean): BedPlan {
  const marked = state.markSince(stay.id, mark) !== null
  if (marked === to) {
    const cancel = m.event === 'A25' || m.event === 'A52' || m.event === 'A53'
    if (cancel)
      return park(
        'nothing-to-cancel',
        `encounter ${m.encounter} has no ${m.event} to cancel: the stay is ${to ? 'already' : 'not'} ${mark}`,
      )
    if (mark === 'on-leave')
      return park(
        to ? 'already-on-leave' : 'not-on-leave',
        `encounter ${m.encounter} is ${to ? 'already' : 'not'} on leave`,
      )
  }
  return apply({ op: 'mark', stay, mark, at: to ? m.eventAt : null })
}

/** The changes a bed event makes, or why it is parked. */
export function planBedEvent(m: WardMessage, state: BedEventState): BedPlan {
  if (m.event === 'A20') return bedStatus(m, state)
  if (state.lastAppliedAt !== null && m.eventAt < state.lastAppliedAt)
    return park(
      'out-of-order',
      `the event (${new Date(m.eventAt).toISOString()}) is older than the last one applied to encounter ${m.encounter} (${new Date(state.lastAppliedAt).toISOString()})`,
    )
  const active = state.encounterOccupants.find((o) => o.dischargedAt === null)
  if (m.event === 'A14' || m.event === 'A15') return expect(m, active)
  if (m.event === 'A27') return cancelExpectation(m, state, 'admission')
  if (m.event === 'A26') return cancelExpectation(m, state, 'transfer')
  if (!active) return park('not-admitted', `encounter ${m.encounter} has no active occupant`)
  switch (m.event) {
    case 'A16':
      return toggle(m, state, active, 'discharge-expected', true)
    case 'A25':
      return toggle(m, state, active, 'discharge-expected', false)
    case 'A21':
    case 'A53':
      return toggle(m, state, active, 'on-leave', true)
    default:
      // A22 (back from leave) and A52 (the leave out cancelled).
      return toggle(m, state, active, 'on-leave', false)
  }
}
