/**
 * The plans of the ADT events that change who lies where, which patient a stay is of, or which
 * visit (A06, A07, A17, A40, A47, A50, A54, A55), beside the admission events of adt-ward.ts,
 * whose rules they reuse where the standard says they mean the same. Pure, as adt-ward.ts.
 */
import type { Location, WardMessage } from './adt-message.js'
import { isPatientEvent, isUnfollowed, UNFOLLOWED } from './adt-patient-message.js'
import {
  apply,
  type Occupant,
  outOfOrder,
  park,
  planWardChange,
  planWithin,
  sameBed,
  type WardChange,
  type WardPlan,
  type WardState,
  where,
} from './adt-ward.js'

/** What these events read besides the message's own encounter. */
export interface PatientEventState extends WardState {
  /** Every stay of an encounter, newest first. */
  staysOf(encounter: string): Occupant[]
  /** The event time of the last message applied to an encounter; null: none. */
  lastAppliedOf(encounter: string): number | null
  /** The stays, active and past, of one facility (null: none) that a patient identifier occupied. */
  staysOfPatient(patient: string, facility: string | null): Occupant[]
}

const activeOf = (stays: Occupant[]) => stays.find((o) => o.dischargedAt === null)
const facilityName = (facility: string | null) => (facility === null ? 'no facility' : `facility ${facility}`)
const placeOf = (o: Occupant): Location => ({ facility: o.facility, room: o.room, bed: o.bed })

/** A06 (outpatient to inpatient): with a bed, an admission unless the encounter already lies there. */
function changeToInpatient(m: WardMessage, state: WardState, transferOnA08: boolean): WardPlan {
  const late = outOfOrder(m, m.encounter, state.lastAppliedAt)
  if (late) return late
  const active = activeOf(state.encounterOccupants)
  // No bed yet: the ward learns it from the A02 (or A08) that follows.
  if (m.location === null) return apply()
  if (!active) return planWardChange({ ...m, event: 'A01' }, state, transferOnA08)
  if (sameBed(m.location, active)) return apply()
  return park(
    'already-admitted',
    `encounter ${m.encounter} is already in ${where(placeOf(active))}; send an A02 to move it`,
  )
}

/** A17: the two encounters exchange their beds, both stays ended and both new ones made in one change. */
function swap(m: WardMessage, state: PatientEventState): WardPlan {
  const other = m.swapWith as NonNullable<WardMessage['swapWith']>
  const first = m.location as Location
  const late =
    outOfOrder(m, m.encounter, state.lastAppliedAt) ??
    outOfOrder(m, other.encounter, state.lastAppliedOf(other.encounter))
  if (late) return late
  if (first.facility !== other.location.facility)
    return park(
      'other-facility',
      `the A17 names beds of ${facilityName(first.facility)} and of ${facilityName(other.location.facility)}; a swap stays within one facility`,
    )
  const a = activeOf(state.encounterOccupants)
  const b = activeOf(state.staysOf(other.encounter))
  if (!a) return park('not-admitted', `encounter ${m.encounter} (first group) has no active occupant`)
  if (!b) return park('not-admitted', `encounter ${other.encounter} (second group) has no active occupant`)
  // PV1-3 names either each patient's bed or the bed each goes to (sites differ); both mean these two beds.
  const named = `${where(first)} or ${where(other.location)}`
  for (const [stay, encounter] of [
    [a, m.encounter],
    [b, other.encounter],
  ] as const) {
    if (!sameBed(first, stay) && !sameBed(other.location, stay)) {
      // A stay in another facility is not named: the admins of this one read the reason.
      const at = stay.facility === first.facility ? `: it is in ${where(placeOf(stay))}` : ''
      return park('not-in-bed', `encounter ${encounter} is not in ${named}${at}`)
    }
  }
  if (sameBed(placeOf(a), b))
    return park('not-in-bed', `encounters ${m.encounter} and ${other.encounter} share ${where(placeOf(a))}`)
  const moved = (stay: Occupant, to: Occupant, encounter: string, patient: string | null, provider: string | null) =>
    ({
      op: 'admit',
      location: placeOf(to),
      encounter,
      occupiedBy: patient ?? stay.occupiedBy,
      provider: provider ?? stay.provider,
      occupiedAt: m.eventAt,
    }) satisfies WardChange
  // Both stays end before either new one begins, so one bed never has two active occupants.
  return apply(
    { op: 'discharge', id: a.id, at: m.eventAt },
    { op: 'discharge', id: b.id, at: m.eventAt },
    moved(a, b, m.encounter, m.patient, m.provider),
    moved(b, a, other.encounter, other.patient, other.provider),
  )
}

/** A40, A47: the stays of the named facility occupied by MRG-1 follow PID-3. */
function merge(m: WardMessage, state: PatientEventState): WardPlan {
  const changes: WardChange[] = []
  for (const { from, to } of m.merges ?? []) {
    if (from === to) continue
    const stays = state.staysOfPatient(from, m.facility)
    if (stays.length === 0)
      return park(
        'unknown-patient',
        `no stay of ${facilityName(m.facility)} was occupied by patient ${from} (MRG-1), active or past`,
      )
    for (const stay of stays) changes.push({ op: 'relabel', id: stay.id, occupiedBy: to })
  }
  return apply(...changes)
}

/** A50: the stays of MRG-5 and its message log take the visit number of PV1-19. */
function renumber(m: WardMessage, state: PatientEventState): WardPlan {
  const previous = m.previousEncounter as string
  const late = outOfOrder(m, previous, state.lastAppliedOf(previous))
  if (late) return late
  const stays = state.staysOf(previous)
  if (stays.length === 0) return park('unknown-encounter', `no stay has visit number ${previous} (MRG-5)`)
  if (state.encounterOccupants.length > 0)
    return park('encounter-taken', `visit number ${m.encounter} (PV1-19) already belongs to an encounter of the ward`)
  // The facility of a stay elsewhere is not named: the admins of this one read the reason.
  if (stays.some((s) => s.facility !== m.facility))
    return park('other-facility', `encounter ${previous} has a stay outside ${facilityName(m.facility)}`)
  return apply(...stays.map((s): WardChange => ({ op: 'relabel', id: s.id, encounter: m.encounter })), {
    op: 'renumber-log',
    from: previous,
    to: m.encounter,
    facility: m.facility,
  })
}

/** Events that keep to the facility the message names themselves, over stays of other encounters. */
const SELF_BOUNDED: ReadonlySet<string> = new Set(['A17', 'A40', 'A47', 'A50'])

/**
 * The plan of a message filed under `facility` (adt-ward.ts, planWithin): a swap, merge or visit
 * renumbering changes stays of encounters other than the message's, which planWithin cannot place;
 * each plans within the facility the message names, so it is parked when filed under another.
 */
export function planAdtWithin(
  m: WardMessage,
  state: PatientEventState,
  transferOnA08: boolean,
  facility: string | null,
): WardPlan {
  if (!SELF_BOUNDED.has(m.event)) return planWithin(m, state, transferOnA08, facility, planAdt)
  if (m.facility === facility) return planAdt(m, state, transferOnA08)
  return park(
    'other-facility',
    `the ${m.event} names ${facilityName(m.facility)}, not ${facilityName(facility)}, which it is filed under; nothing was changed`,
  )
}

/** The changes any ward event makes, or why it is parked. */
export function planAdt(m: WardMessage, state: PatientEventState, transferOnA08: boolean): WardPlan {
  if (!isPatientEvent(m.event)) return planWardChange(m, state, transferOnA08)
  if (isUnfollowed(m.event))
    return park(
      'not-followed',
      `the ward does not follow an ${m.event} (${UNFOLLOWED[m.event]}); check the ward, correct it by hand, then dismiss this message`,
    )
  switch (m.event) {
    case 'A06':
      return changeToInpatient(m, state, transferOnA08)
    // Ending the inpatient stay is the ward's discharge; an A13 cancels it as it cancels an A03.
    case 'A07':
      return planWardChange({ ...m, event: 'A03' }, state, transferOnA08)
    // The attending doctor only (PV1-7): an A08 that never moves. The A55 carries the doctor to restore.
    case 'A54':
    case 'A55':
      return planWardChange({ ...m, event: 'A08', location: null }, state, transferOnA08)
    case 'A17':
      return swap(m, state)
    case 'A40':
    case 'A47':
      return merge(m, state)
    case 'A50':
      return renumber(m, state)
  }
}
