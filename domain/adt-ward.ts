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
  /** The bed's stay, other than `except`, discharged latest after `at`, if any (it ended after `at`). */
  dischargedAfter(location: Location, at: number, except: string | null): Occupant | null
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
  /** A merge (A40, A47) or a new visit number (A50): the stay's patient or encounter follows. */
  | { op: 'relabel'; id: string; occupiedBy?: string; encounter?: string }
  /** A50: the message log's rows of the old visit number follow it (out-of-order checks, retries). */
  | { op: 'renumber-log'; from: string; to: string; facility: string | null }

export const PARK_CODES = [
  'out-of-order',
  'other-facility',
  'already-admitted',
  'bed-occupied',
  'not-admitted',
  'not-discharged',
  'nothing-to-cancel',
  'bed-taken-since',
  // domain/adt-patient-events.ts
  'not-in-bed',
  'unknown-patient',
  'unknown-encounter',
  'encounter-taken',
  'other-facility',
  'not-followed',
  // domain/adt-bed-events.ts
  ...BED_PARK_CODES,
] as const
export type ParkCode = (typeof PARK_CODES)[number]

export type WardPlan = { kind: 'apply'; changes: WardChange[] } | { kind: 'park'; code: ParkCode; reason: string }

export const park = (code: ParkCode, reason: string): WardPlan => ({ kind: 'park', code, reason })
export const apply = (...changes: WardChange[]): WardPlan => ({ kind: 'apply', changes })

export const sameBed = (a: Location, b: Occupant) => a.facility === b.facility && a.bed === b.bed
export const where = (l: Location) => (l.facility === null ? `bed ${l.bed}` : `bed ${l.bed} of ${l.facility}`)

/** A bed another occupant than `except` holds, under the exclusive policy. */
function heldBy(state: WardState, location: Location, except: string | null): Occupant | null {
  if (!state.exclusiveBeds) return null
  const active = state.activeOnBed(location)
  return active !== null && active.id !== except ? active : null
}

/**
 * Under the exclusive policy, a stay from the event time on may not overlap one the bed had since:
 * a message older than the bed's last discharge (a retry after the bed was freed, an event sent
 * late) is parked, not applied at a time the bed was someone else's.
 */
function takenSince(m: WardMessage, state: WardState, location: Location, except: string | null): WardPlan | null {
  if (!state.exclusiveBeds) return null
  const since = state.dischargedAfter(location, m.eventAt, except)
  if (since === null) return null
  const iso = (at: number) => new Date(at).toISOString()
  return park(
    'bed-taken-since',
    `${where(location)} was occupied until ${iso(since.dischargedAt as number)} (occupant ${since.id}), after this event's time ${iso(m.eventAt)}: the stays would overlap`,
  )
}

function admit(m: WardMessage, state: WardState, active: Occupant | undefined): WardPlan {
  const location = m.location as Location
  if (active) return park('already-admitted', `encounter ${m.encounter} is already in ${where(active as Location)}`)
  const holder = heldBy(state, location, null)
  if (holder) return park('bed-occupied', `${where(location)} is occupied by another encounter (occupant ${holder.id})`)
  const taken = takenSince(m, state, location, null)
  if (taken) return taken
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
  const taken = takenSince(m, state, to, active.id)
  if (taken) return taken
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

/** Parked when the event is older than the last one applied to `encounter`; null: in order. */
export function outOfOrder(m: WardMessage, encounter: string, lastAppliedAt: number | null): WardPlan | null {
  if (lastAppliedAt === null || m.eventAt >= lastAppliedAt) return null
  return park(
    'out-of-order',
    `the event (${new Date(m.eventAt).toISOString()}) is older than the last one applied to encounter ${encounter} (${new Date(lastAppliedAt).toISOString()})`,
  )
}

/** The changes an event makes to the ward, or why it is parked (the events of adt-patient-events.ts: planAdt). */
export function planWardChange(m: WardMessage, state: WardState, transferOnA08: boolean): WardPlan {
  const late = outOfOrder(m, m.encounter, state.lastAppliedAt)
  if (late) return late
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
      // The bed events move no patient: domain/adt-bed-events.ts plans them; the patient events
      // domain/adt-patient-events.ts (planAdt).
      if (isBedEvent(m.event)) return apply()
      throw new Error(`an ${m.event} is planned by planAdt (domain/adt-patient-events.ts)`)
    }
  }
}

/** The facility of each change a plan makes: an admission's place, else the stay it changes. */
export function facilitiesChanged(plan: WardPlan, state: WardState): (string | null)[] {
  if (plan.kind === 'park') return []
  // Renumbering the message log changes no stay: it has no facility of its own.
  return plan.changes.flatMap((change) =>
    change.op === 'renumber-log'
      ? []
      : change.op === 'admit'
        ? change.location.facility
        : (state.encounterOccupants.find((o) => o.id === change.id)?.facility ?? null),
  )
}

/** A park whose reason names nothing of the encounter's stays outside `facility`, the one it is filed under. */
export function parkedElsewhere(m: WardMessage, code: ParkCode, facility: string | null): WardPlan {
  const filed = facility === null ? 'no facility' : `facility ${facility}`
  return park(code, `encounter ${m.encounter} (${code}): it has a stay outside ${filed}, not named here`)
}

/**
 * The plan of a message filed under `facility` (listed, notified, authorised there): parked when it
 * would change a stay anywhere else, so a message naming one ward never discharges, moves or
 * updates a patient of another, whose admins would not even see it. The reason does not name the
 * other facility: the admins of this one read it.
 */
export function planWithin<S extends WardState>(
  m: WardMessage,
  state: S,
  transferOnA08: boolean,
  facility: string | null,
  planner: (m: WardMessage, state: S, transferOnA08: boolean) => WardPlan = planWardChange,
): WardPlan {
  const plan = planner(m, state, transferOnA08)
  const filed = facility === null ? 'no facility' : `facility ${facility}`
  if (plan.kind === 'park') {
    // Its reason may name a bed of the encounter's stay elsewhere (already in bed 4 of B).
    if (state.encounterOccupants.every((o) => o.facility === facility)) return plan
    return parkedElsewhere(m, plan.code, facility)
  }
  if (facilitiesChanged(plan, state).every((changed) => changed === facility)) return plan
  return park(
    'other-facility',
    `the ${m.event} would change encounter ${m.encounter} outside ${filed}, which the message names or is filed under; nothing was changed`,
  )
}
