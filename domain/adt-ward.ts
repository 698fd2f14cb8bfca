/**
 * What an ADT event means for the ward: given the message and the part of the ward it touches, the
 * changes to make, or the reason to park it (understood, but it does not fit the ward as it is).
 * Pure: the caller reads the state and applies the changes in one transaction (hl7/, db/).
 */
import { BED_PARK_CODES, isBedEvent } from './adt-bed-events.js'
import type { Location, WardMessage } from './adt-message.js'

/** An occupant as the plan needs it. */
export interface Occupant {
  id: string
  facility: string | null
  room: string | null
  bed: string
  occupiedBy: string
  provider: string | null
  occupiedAt: number
  dischargedAt: number | null
}

export interface WardState {
  /** Every occupant of the message's encounter, newest first (by occupiedAt, then creation). */
  encounterOccupants: Occupant[]
  /** The active occupant of a bed, if any. */
  activeOnBed(location: Location): Occupant | null
  /** The event time of the last message applied to this encounter; null: none. */
  lastAppliedAt: number | null
  /** BED_POLICY=exclusive: one active occupant a bed. */
  exclusiveBeds: boolean
}

export type WardChange =
  | {
      op: 'admit'
      location: Location
      encounter: string
      occupiedBy: string
      provider: string | null
      occupiedAt: number
    }
  | { op: 'discharge'; id: string; at: number }
  | { op: 'reopen'; id: string }
  | { op: 'provider'; id: string; provider: string }
  | { op: 'remove'; id: string }

export const PARK_CODES = [
  'out-of-order',
  'already-admitted',
  'bed-occupied',
  'not-admitted',
  'not-discharged',
  'nothing-to-cancel',
  'bed-taken-since',
  ...BED_PARK_CODES,
] as const
export type ParkCode = (typeof PARK_CODES)[number]

export type WardPlan = { kind: 'apply'; changes: WardChange[] } | { kind: 'park'; code: ParkCode; reason: string }

const park = (code: ParkCode, reason: string): WardPlan => ({ kind: 'park', code, reason })
const apply = (...changes: WardChange[]): WardPlan => ({ kind: 'apply', changes })

const sameBed = (a: Location, b: Occupant) => a.facility === b.facility && a.bed === b.bed
const where = (l: Location) => (l.facility === null ? `bed ${l.bed}` : `bed ${l.bed} of ${l.facility}`)

/** A bed another occupant than `except` holds, under the exclusive policy. */
function heldBy(state: WardState, location: Location, except: string | null): Occupant | null {
  if (!state.exclusiveBeds) return null
  const active = state.activeOnBed(location)
  return active !== null && active.id !== except ? active : null
}

function admit(m: WardMessage, state: WardState, active: Occupant | undefined): WardPlan {
  const location = m.location as Location
  if (active) return park('already-admitted', `encounter ${m.encounter} is already in ${where(active as Location)}`)
  const holder = heldBy(state, location, null)
  if (holder) return park('bed-occupied', `${where(location)} is occupied by another encounter (occupant ${holder.id})`)
  return apply({
    op: 'admit',
    location,
    encounter: m.encounter,
    occupiedBy: m.patient as string,
    provider: m.provider,
    occupiedAt: m.eventAt,
  })
}

/** Discharge at the event time and admit at the new place, or nothing when the place is the same. */
function transfer(m: WardMessage, state: WardState, active: Occupant, to: Location): WardPlan {
  if (sameBed(to, active)) return apply()
  const holder = heldBy(state, to, active.id)
  if (holder) return park('bed-occupied', `${where(to)} is occupied by another encounter (occupant ${holder.id})`)
  return apply(
    { op: 'discharge', id: active.id, at: m.eventAt },
    {
      op: 'admit',
      location: to,
      encounter: m.encounter,
      occupiedBy: m.patient ?? active.occupiedBy,
      provider: m.provider ?? active.provider,
      occupiedAt: m.eventAt,
    },
  )
}

function update(m: WardMessage, state: WardState, active: Occupant, transferOnA08: boolean): WardPlan {
  if (transferOnA08 && m.location !== null && !sameBed(m.location, active)) {
    return transfer(m, state, active, m.location)
  }
  if (m.provider !== null && m.provider !== active.provider)
    return apply({ op: 'provider', id: active.id, provider: m.provider })
  return apply()
}

/** A12: the transfer's new occupant goes, the one before it is active again. */
function cancelTransfer(m: WardMessage, state: WardState, active: Occupant): WardPlan {
  const previous = state.encounterOccupants.find((o) => o.id !== active.id && o.dischargedAt !== null)
  if (!previous) return park('nothing-to-cancel', `encounter ${m.encounter} has no transfer to cancel`)
  const holder = sameBed(previous as Location, active) ? null : heldBy(state, previous as Location, previous.id)
  if (holder) return park('bed-taken-since', `${where(previous as Location)} was taken since by occupant ${holder.id}`)
  return apply({ op: 'remove', id: active.id }, { op: 'reopen', id: previous.id })
}

/** The changes an event makes to the ward, or why it is parked. */
export function planWardChange(m: WardMessage, state: WardState, transferOnA08: boolean): WardPlan {
  if (state.lastAppliedAt !== null && m.eventAt < state.lastAppliedAt)
    return park(
      'out-of-order',
      `the event (${new Date(m.eventAt).toISOString()}) is older than the last one applied to encounter ${m.encounter} (${new Date(state.lastAppliedAt).toISOString()})`,
    )
  const active = state.encounterOccupants.find((o) => o.dischargedAt === null)
  const notAdmitted = () => park('not-admitted', `encounter ${m.encounter} has no active occupant`)
  switch (m.event) {
    case 'A01':
      return admit(m, state, active)
    case 'A02':
      return active ? transfer(m, state, active, m.location as Location) : notAdmitted()
    case 'A03':
      return active ? apply({ op: 'discharge', id: active.id, at: m.dischargedAt }) : notAdmitted()
    case 'A08':
      return active ? update(m, state, active, transferOnA08) : notAdmitted()
    case 'A11':
      if (!active) return notAdmitted()
      // Transferred since (more than one stay): cancelling the admission would erase the transfer.
      if (state.encounterOccupants.length > 1)
        return park('nothing-to-cancel', `encounter ${m.encounter} was transferred since; cancel the transfer first`)
      return apply({ op: 'remove', id: active.id })
    case 'A12':
      return active ? cancelTransfer(m, state, active) : notAdmitted()
    case 'A13': {
      if (active) return park('not-discharged', `encounter ${m.encounter} is not discharged`)
      const last = state.encounterOccupants[0]
      if (!last) return park('nothing-to-cancel', `encounter ${m.encounter} has no discharge to cancel`)
      const holder = heldBy(state, last as Location, last.id)
      if (holder) return park('bed-taken-since', `${where(last as Location)} was taken since by occupant ${holder.id}`)
      return apply({ op: 'reopen', id: last.id })
    }
    default: {
      // The bed events move no patient: domain/adt-bed-events.ts plans them. Any other event
      // without a case above is a type error here.
      if (isBedEvent(m.event)) return apply()
      const unplanned: never = m.event
      return unplanned
    }
  }
}
