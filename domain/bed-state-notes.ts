/**
 * The notifications a bed's state produces for its ward: what changed (a housekeeping state set or
 * cleared, a patient expected or no longer, a patient on leave or back, a discharge expected or
 * no longer), and an admission into a bed that is not available. Texts only, no I/O.
 */
import type { BedStatus, HousekeepingState } from '../schemas/beds.js'
import type { NewNotification } from './ward-events.js'

const where = (s: BedStatus) => `bed ${s.bed}`
const stays = (marks: BedStatus['onLeave']) => new Set((marks ?? []).map((m) => m.wardOccupantId))
const grew = (a: Set<string>, b: Set<string>) => [...b].some((id) => !a.has(id))

/** The title and body of a change, the first difference found; null when nothing shown changed. */
function describe(before: BedStatus, after: BedStatus): [string, string, string] | null {
  const b = before.housekeeping?.state
  const a = after.housekeeping?.state
  if (a !== undefined && a !== b)
    return ['bed-state-set', `Bed ${after.bed} is ${a}`, `Bed ${after.bed} is now ${a}${noteOf(after)}.`]
  if (a === undefined && b !== undefined)
    return ['bed-state-cleared', `Bed ${after.bed}: ${b} no longer`, `The ${b} state of ${where(after)} was cleared.`]
  const e = after.expected
  if (e && (e.encounter !== before.expected?.encounter || e.kind !== before.expected?.kind))
    return [
      'patient-expected',
      `Patient expected in bed ${after.bed}`,
      `Encounter ${e.encounter} is expected in ${where(after)} (a pending ${e.kind}).`,
    ]
  const gone = before.expected
  if (gone && !e)
    return [
      'patient-expected-cancelled',
      `Bed ${after.bed} no longer expected`,
      `The pending ${gone.kind} of encounter ${gone.encounter} to ${where(after)} was cancelled or moved.`,
    ]
  const [awayBefore, awayAfter] = [stays(before.onLeave), stays(after.onLeave)]
  if (grew(awayBefore, awayAfter))
    return [
      'patient-on-leave',
      `Patient on leave, bed ${after.bed}`,
      `The patient of ${where(after)} is on leave; the bed is kept.`,
    ]
  if (grew(awayAfter, awayBefore))
    return ['patient-back', `Patient back, bed ${after.bed}`, `The patient of ${where(after)} is back from leave.`]
  const [leavingBefore, leavingAfter] = [stays(before.dischargeExpected), stays(after.dischargeExpected)]
  if (grew(leavingBefore, leavingAfter))
    return [
      'discharge-expected',
      `Discharge expected, bed ${after.bed}`,
      `The patient of ${where(after)} is to be discharged.`,
    ]
  if (grew(leavingAfter, leavingBefore))
    return [
      'discharge-not-expected',
      `Discharge no longer expected, bed ${after.bed}`,
      `The pending discharge from ${where(after)} was cancelled.`,
    ]
  return null
}

function noteOf(s: BedStatus): string {
  return s.housekeeping?.note === undefined ? '' : ` (${s.housekeeping.note})`
}

function forWard(facility: string | null, code: string, title: string, body: string, meta: object): NewNotification {
  return { facility, unboundOnly: facility === null, code, type: 'ward', title, body, meta: { ...meta } }
}

/** The notification a change of a bed's state produces, for everyone of its facility; null: none. */
export function bedStateNotification(before: BedStatus, after: BedStatus, at: number): NewNotification | null {
  const described = describe(before, after)
  if (!described) return null
  const [code, title, body] = described
  return {
    ...forWard(after.facility ?? null, code, title, body, { bed: after.bed, state: after.state }),
    createdAt: at,
  }
}

/** An admission the ADT feed made into a bed that is not available: applied, and the ward told. */
export function unavailableAdmission(
  facility: string | null,
  bed: string,
  encounter: string,
  by: string,
  state: { state: HousekeepingState; since: number; setBy: string },
): NewNotification {
  return forWard(
    facility,
    'bed-not-available',
    `Bed ${bed} is ${state.state}: a patient was admitted into it`,
    `Encounter ${encounter} was placed in bed ${bed} by ${by} while the bed is ${state.state} ` +
      `(since ${new Date(state.since).toISOString()}, set by ${state.setBy}). Check the bed, then clear its state.`,
    { bed, encounter, state: state.state },
  )
}
