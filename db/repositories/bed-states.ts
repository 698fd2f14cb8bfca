import type { Database } from 'better-sqlite3'
import { bedStateNotification, unavailableAdmission } from '../../domain/bed-state-notes.js'
import { NOT_FOR_ADMISSION } from '../../domain/bed-states.js'
import { BedNotAvailableError, UnknownBedError } from '../../domain/errors.js'
import type { Principal } from '../../domain/principal.js'
import type { NewNotification } from '../../domain/ward-events.js'
import type { BedStatus, HousekeepingState } from '../../schemas/beds.js'
import { writeAlone } from '../data-version.js'
import type { WriteQueue } from '../write-queue.js'
import { createBedStateReads, type HousekeepingRow, keyOf } from './bed-state-reads.js'
import { type ChangeLogs, logChange } from './changes.js'

export interface BedStateOptions extends ChangeLogs {
  /** The server's write queue; absent (the CLI): each write is its own IMMEDIATE transaction. */
  writes?: WriteQueue
  /** BED_EXPECTED_HOURS: an expectation older than this is gone (0: never). */
  expectedHours: number
  /** Stores a notification inside the current transaction (the notification repository's create). */
  notify(notification: NewNotification): void
}

export type StayMarkKind = 'on-leave' | 'discharge-expected'

const when = (at: number) => new Date(at).toISOString()

/**
 * The writes of bed states (migration 19): housekeeping, expectations, stay marks. Each change is
 * one audit entry, one `bed-states patched` feed event carrying the bed's state before and after,
 * and one notification for the ward (domain/bed-state-notes.ts), in the change's own transaction;
 * a change that changes nothing logs nothing.
 */
export function createBedStateRepository(db: Database, opts: BedStateOptions) {
  const reads = createBedStateReads(db, opts.expectedHours)
  const run = <T>(job: () => T): Promise<T> => {
    if (opts.writes) return opts.writes.run(job)
    return Promise.resolve(writeAlone(db, db.transaction(job)))
  }
  const putHousekeeping = db.prepare(
    `INSERT INTO bed_states (facility, bed, state, since, set_by, note) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (facility, bed) DO UPDATE SET state = excluded.state, since = excluded.since,
       set_by = excluded.set_by, note = excluded.note`,
  )
  const dropHousekeeping = db.prepare('DELETE FROM bed_states WHERE facility = ? AND bed = ?')
  const putExpectation = db.prepare(
    `INSERT INTO bed_expectations (facility, bed, encounter, kind, since, set_by) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (facility, bed) DO UPDATE SET encounter = excluded.encounter, kind = excluded.kind,
       since = excluded.since, set_by = excluded.set_by`,
  )
  const dropExpectation = db.prepare('DELETE FROM bed_expectations WHERE facility = ? AND bed = ? AND encounter = ?')
  const expectationsOf = db.prepare<[string], { facility: string; bed: string; kind: string }>(
    'SELECT facility, bed, kind FROM bed_expectations WHERE encounter = ?',
  )
  const putMark = db.prepare(
    `INSERT INTO stay_marks (occupant, mark, since, set_by) VALUES (?, ?, ?, ?)
     ON CONFLICT (occupant, mark) DO UPDATE SET since = excluded.since, set_by = excluded.set_by`,
  )
  const dropMark = db.prepare('DELETE FROM stay_marks WHERE occupant = ? AND mark = ?')
  const markOf = db
    .prepare<[string, string], number>('SELECT since FROM stay_marks WHERE occupant = ? AND mark = ?')
    .pluck()

  /** Runs `mutate` on one bed; if the bed's state changed, logs it before and after and tells the ward. */
  function change(actor: Principal, facility: string | null, bed: string, mutate: () => void): BedStatus {
    const now = Date.now()
    const before = reads.statusOf(facility, bed, now)
    mutate()
    const after = reads.statusOf(facility, bed, now)
    if (JSON.stringify(before) === JSON.stringify(after)) return after
    logChange(opts, actor, { resource: 'bed-states', recordId: bed, facility, operation: 'patch', before, after }, now)
    // The ward hears of it as of an admission: a notification in the same transaction.
    const note = bedStateNotification(before, after, now)
    if (note) opts.notify(note)
    return after
  }

  /** Sets (or with null clears) a bed's housekeeping state. `at`: since when (an A20's event time). */
  function setHousekeeping(
    actor: Principal,
    facility: string | null,
    bed: string,
    state: HousekeepingState | null,
    note: string | null,
    at = Date.now(),
  ): BedStatus {
    if (!reads.known(facility, bed)) throw new UnknownBedError(bed, facility ?? 'the records without a facility')
    const current = reads.housekeepingOf(facility, bed)
    return change(actor, facility, bed, () => {
      if (state === null) dropHousekeeping.run(keyOf(facility), bed)
      else if (current?.state !== state || current.note !== note)
        // The same state again keeps its `since`: the bed has been so since then.
        putHousekeeping.run(
          keyOf(facility),
          bed,
          state,
          current?.state === state ? current.since : at,
          actor.account,
          note,
        )
    })
  }

  /** The housekeeping state that keeps a bed from an admission, if any. */
  function blocking(facility: string | null, bed: string): HousekeepingRow | null {
    const row = reads.housekeepingOf(facility, bed)
    return row !== undefined && NOT_FOR_ADMISSION.has(row.state) ? row : null
  }

  /** Refuses an API admission into a closed, cleaned or contaminated bed (409 BED_NOT_AVAILABLE). */
  function assertAdmissible(facility: string | null, bed: string): void {
    const row = blocking(facility, bed)
    if (row) throw new BedNotAvailableError(bed, row.state, when(row.since), row.set_by)
  }

  /**
   * An ADT admission into a bed that is not available is applied (the HIS decides) and told to
   * the ward: a notification for its facility, in the admission's transaction.
   */
  function tellAdmittedAnyway(actor: Principal, facility: string | null, bed: string, encounter: string): void {
    const row = blocking(facility, bed)
    if (!row) return
    opts.notify(
      unavailableAdmission(facility, bed, encounter, actor.account, {
        state: row.state,
        since: row.since,
        setBy: row.set_by,
      }),
    )
  }

  function expect(
    actor: Principal,
    facility: string | null,
    bed: string,
    encounter: string,
    kind: 'admission' | 'transfer',
    since: number,
  ): BedStatus {
    return change(actor, facility, bed, () => {
      // One bed a patient is expected in: a new pending event moves the expectation.
      for (const other of expectationsOf.all(encounter))
        if (other.facility !== keyOf(facility) || other.bed !== bed)
          unexpectAt(actor, other.facility, other.bed, encounter)
      putExpectation.run(keyOf(facility), bed, encounter, kind, since, actor.account)
    })
  }

  function unexpectAt(actor: Principal, key: string, bed: string, encounter: string): void {
    const facility = key === '' ? null : key
    change(actor, facility, bed, () => dropExpectation.run(key, bed, encounter))
  }

  /** Clears the encounter's expectations of `kind`; answers how many there were. */
  function unexpect(actor: Principal, encounter: string, kind: 'admission' | 'transfer'): number {
    const found = expectationsOf.all(encounter).filter((e) => e.kind === kind)
    for (const e of found) unexpectAt(actor, e.facility, e.bed, encounter)
    return found.length
  }

  /**
   * An A50: the visit's pending admission or transfer follows its new number, as its stays do; only
   * in the facility the A50 names (another ward's expectation of the same number is that ward's).
   */
  function renumber(actor: Principal, from: string, to: string, within: string | null): void {
    for (const e of expectationsOf.all(from)) {
      const facility = e.facility === '' ? null : e.facility
      if (facility !== within) continue
      const since = reads.expectationOf(facility, e.bed)?.since as number
      expect(actor, facility, e.bed, to, e.kind as 'admission' | 'transfer', since)
    }
  }

  /** Sets (since `at`) or clears (`at` null) a mark of an active stay. */
  function mark(
    actor: Principal,
    stay: { id: string; facility: string | null; bed: string },
    kind: StayMarkKind,
    at: number | null,
  ): BedStatus {
    return change(actor, stay.facility, stay.bed, () => {
      if (at === null) dropMark.run(stay.id, kind)
      else putMark.run(stay.id, kind, at, actor.account)
    })
  }

  return {
    reads,
    assertAdmissible,
    /** Inside a write-queue job (the ADT feed's, db/repositories/adt-bed-events.ts). */
    inTransaction: { setHousekeeping, expect, unexpect, mark, tellAdmittedAnyway, renumber },
    markSince: (occupant: string, kind: StayMarkKind): number | null => markOf.get(occupant, kind) ?? null,
    /** The facilities (null: none) whose beds expect the encounter. */
    expectedIn: (encounter: string): (string | null)[] =>
      expectationsOf.all(encounter).map((e) => (e.facility === '' ? null : e.facility)),
    setHousekeeping: (
      actor: Principal,
      facility: string | null,
      bed: string,
      state: HousekeepingState | null,
      note: string | null,
    ): Promise<BedStatus> => run(() => setHousekeeping(actor, facility, bed, state, note)),
  }
}

export type BedStateRepository = ReturnType<typeof createBedStateRepository>
