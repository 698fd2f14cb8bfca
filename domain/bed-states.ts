/**
 * What a bed's state is: the words the ward uses (docs/BOARD.md), the housekeeping states staff or
 * an ADT A20 set (HL7 table 0116), and the one state a bed shows. Pure: the caller reads the tables.
 */
import type { BedStateWord, HousekeepingState } from '../schemas/beds.js'

/**
 * Not free for an admission over the API: a closed bed is out of service, one being cleaned is not
 * ready, a contaminated one must be cleaned first. An isolated bed is ready, for the patient who
 * needs isolation. The ADT feed's admissions are applied anyway (the HIS decides) and told to the ward.
 */
export const NOT_FOR_ADMISSION: ReadonlySet<HousekeepingState> = new Set(['cleaning', 'closed', 'contaminated'])

/** HL7 table 0116 (NPU-2, bed status): C closed, H housekeeping, K contaminated, I isolated; O and U clear. */
export const TABLE_0116: Readonly<Record<string, HousekeepingState | null>> = {
  C: 'closed',
  H: 'cleaning',
  K: 'contaminated',
  I: 'isolated',
  O: null,
  U: null,
}

export interface BedFacts {
  /** The active stays of the bed, each with whether its patient is on leave. */
  active: { onLeave: boolean }[]
  housekeeping: HousekeepingState | null
  /** A live expectation (not timed out) names the bed. */
  expected: boolean
}

/**
 * The one state a bed shows: occupied (or on leave, when every patient in it is away) wins, since
 * a patient is there; then a housekeeping state, which keeps the bed from being given; then an
 * expected patient; else free. A housekeeping state of an occupied bed is shown beside it.
 */
export function shownState(facts: BedFacts): BedStateWord {
  if (facts.active.length > 0) return facts.active.every((stay) => stay.onLeave) ? 'on-leave' : 'occupied'
  if (facts.housekeeping !== null) return facts.housekeeping
  return facts.expected ? 'expected' : 'free'
}

/** An expectation older than `hours` is gone (BED_EXPECTED_HOURS; 0: never). */
export function expectationLive(since: number, now: number, hours: number): boolean {
  return hours === 0 || now - since < hours * 3_600_000
}
