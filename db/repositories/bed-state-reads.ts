import type { Database } from 'better-sqlite3'
import { expectationLive, shownState } from '../../domain/bed-states.js'
import type { BedStatus, HousekeepingState } from '../../schemas/beds.js'

/** In the bed tables, '' stands for "no facility" (facility ids are never empty), as in seen_beds. */
export const NO_FACILITY = ''
export const keyOf = (facility: string | null): string => facility ?? NO_FACILITY

export interface HousekeepingRow {
  bed: string
  state: HousekeepingState
  since: number
  set_by: string
  note: string | null
}
export interface ExpectationRow {
  bed: string
  encounter: string
  kind: 'admission' | 'transfer'
  since: number
}
interface MarkRow {
  bed: string
  occupant: string
  mark: 'on-leave' | 'discharge-expected'
  since: number
}

/** A bed's state fields without its name and facility: what GET /beds adds to each bed. */
export type StateFields = Omit<BedStatus, 'facility' | 'bed'>

/**
 * Reads what the ward keeps of its beds' states (migration 19): housekeeping, expectations (live
 * ones only: BED_EXPECTED_HOURS) and the marks of active stays; and answers the state a bed shows.
 * Used by GET /beds, by the bed-state writes (the record before and after a change) and the CLI.
 */
export function createBedStateReads(db: Database, expectedHours: number) {
  const housekeepingOf = db.prepare<[string, string], HousekeepingRow>(
    'SELECT bed, state, since, set_by, note FROM bed_states WHERE facility = ? AND bed = ?',
  )
  const housekeepingAll = db.prepare<[string], HousekeepingRow>(
    'SELECT bed, state, since, set_by, note FROM bed_states WHERE facility = ?',
  )
  const expectationOf = db.prepare<[string, string], ExpectationRow>(
    'SELECT bed, encounter, kind, since FROM bed_expectations WHERE facility = ? AND bed = ?',
  )
  const expectationAll = db.prepare<[string], ExpectationRow>(
    'SELECT bed, encounter, kind, since FROM bed_expectations WHERE facility = ?',
  )
  // The marks of the active stays, through the partial index of active rows.
  const marksOfBed = db.prepare<[string | null, string], MarkRow>(
    `SELECT o.bed, m.occupant, m.mark, m.since FROM ward_occupants o JOIN stay_marks m ON m.occupant = o.id
     WHERE o.facility IS ? AND o.bed = ? AND o.discharged_at IS NULL ORDER BY o.occupied_at, o.id`,
  )
  const marksAll = db.prepare<[string | null], MarkRow>(
    `SELECT o.bed, m.occupant, m.mark, m.since FROM ward_occupants o JOIN stay_marks m ON m.occupant = o.id
     WHERE o.facility IS ? AND o.discharged_at IS NULL ORDER BY o.occupied_at, o.id`,
  )
  const activeOfBed = db
    .prepare<[string | null, string], string>(
      `SELECT id FROM ward_occupants WHERE facility IS ? AND bed = ? AND discharged_at IS NULL ORDER BY occupied_at, id`,
    )
    .pluck()
  const kindsOf = db
    .prepare<[string], 'admission' | 'transfer'>('SELECT kind FROM bed_expectations WHERE encounter = ?')
    .pluck()
  const knownBed = db
    .prepare<{ facility: string; bed: string }, number>(
      `SELECT 1 WHERE EXISTS (SELECT 1 FROM seen_beds WHERE facility = :facility AND bed = :bed)
         OR EXISTS (SELECT 1 FROM kept_beds WHERE facility = :facility AND bed = :bed)
         OR EXISTS (SELECT 1 FROM bed_expectations WHERE facility = :facility AND bed = :bed)`,
    )
    .pluck()

  function fields(
    active: string[],
    housekeeping: HousekeepingRow | undefined,
    expectation: ExpectationRow | undefined,
    marks: MarkRow[],
    now: number,
  ): StateFields {
    const live = expectation !== undefined && expectationLive(expectation.since, now, expectedHours)
    const onLeave = marks.filter((m) => m.mark === 'on-leave')
    const leaving = marks.filter((m) => m.mark === 'discharge-expected')
    const out: StateFields = {
      state: shownState({
        active: active.map((id) => ({ onLeave: onLeave.some((m) => m.occupant === id) })),
        housekeeping: housekeeping?.state ?? null,
        expected: live,
      }),
    }
    if (housekeeping)
      out.housekeeping = {
        state: housekeeping.state,
        since: housekeeping.since,
        setBy: housekeeping.set_by,
        ...(housekeeping.note === null ? {} : { note: housekeeping.note }),
      }
    if (live)
      out.expected = {
        encounter: expectation.encounter,
        kind: expectation.kind,
        since: expectation.since,
        ...(expectedHours === 0 ? {} : { until: expectation.since + expectedHours * 3_600_000 }),
      }
    const stay = (m: MarkRow) => ({ wardOccupantId: m.occupant, since: m.since })
    if (onLeave.length > 0) out.onLeave = onLeave.map(stay)
    if (leaving.length > 0) out.dischargeExpected = leaving.map(stay)
    return out
  }

  /** One bed's state as a record (the audit's and the feed's). */
  function statusOf(facility: string | null, bed: string, now = Date.now()): BedStatus {
    const key = keyOf(facility)
    const state = fields(
      activeOfBed.all(facility, bed),
      housekeepingOf.get(key, bed),
      expectationOf.get(key, bed),
      marksOfBed.all(facility, bed),
      now,
    )
    return { ...(facility === null ? {} : { facility }), bed, ...state }
  }

  /**
   * The state fields of every bed of a facility, read once (inside the caller's read transaction):
   * `of(bed, activeIds)` answers one bed's. `extraBeds` are the beds known only by an expectation.
   */
  function ofFacility(facility: string | null, now = Date.now()) {
    const key = keyOf(facility)
    const housekeeping = new Map(housekeepingAll.all(key).map((r) => [r.bed, r]))
    const expectations = new Map(expectationAll.all(key).map((r) => [r.bed, r]))
    const marks = new Map<string, MarkRow[]>()
    for (const m of marksAll.all(facility)) marks.set(m.bed, [...(marks.get(m.bed) ?? []), m])
    return {
      of: (bed: string, active: string[]): StateFields =>
        fields(active, housekeeping.get(bed), expectations.get(bed), marks.get(bed) ?? [], now),
      expectedBeds: (): string[] =>
        [...expectations.values()].filter((e) => expectationLive(e.since, now, expectedHours)).map((e) => e.bed),
    }
  }

  return {
    statusOf,
    ofFacility,
    housekeepingOf: (facility: string | null, bed: string) => housekeepingOf.get(keyOf(facility), bed),
    expectationOf: (facility: string | null, bed: string) => expectationOf.get(keyOf(facility), bed),
    /** The kinds of the encounter's expectations (timed out ones too: a cancel still clears them). */
    expectationKinds: (encounter: string) => kindsOf.all(encounter),
    /** Whether the ward knows the bed: it had a stay, is listed, or a patient is expected in it. */
    known: (facility: string | null, bed: string): boolean =>
      knownBed.get({ facility: keyOf(facility), bed }) !== undefined,
  }
}

export type BedStateReads = ReturnType<typeof createBedStateReads>
