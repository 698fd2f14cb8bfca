import type { Database } from 'better-sqlite3'
import type { Principal } from '../../domain/principal.js'
import type { WardOccupant } from '../../schemas/ward-occupants.js'
import { writeAlone } from '../data-version.js'
import type { AuditLog } from './audit.js'
import { createBedStateReads, NO_FACILITY, type StateFields } from './bed-state-reads.js'
import { toRecord, type WardOccupantRow } from './ward-occupants.js'

/** A bed as the board shows it: who is in it now, who left it last, and its state. */
export interface BedState extends StateFields {
  bed: string
  room?: string
  /** the occupants still in the bed, oldest first (one, unless BED_POLICY=shared) */
  active: WardOccupant[]
  /** the most recent discharge from the bed, if it ever had one */
  lastDischarged?: WardOccupant
}

/** A bed as the audit records a change of the list: as listed, and the housekeeping state a removal took away. */
type BedRecord = KeptBed & { housekeeping?: Housekeeping }

/** A bed's housekeeping state as the audit records it (`facility-service beds state`, PUT /beds/:bed/state, A20). */
interface Housekeeping {
  state: string
  since: number
  setBy: string
  note?: string
}

/** Who changes the list of beds, and the audit log their change goes to. */
export interface ListChangedBy {
  actor: Principal
  audit: AuditLog
}

/** A bed an administrator listed (`facility-service beds add`), occupied or not. */
export interface KeptBed {
  facility: string | null
  bed: string
  room?: string
}

/**
 * The beds of one facility (or of the records without a facility: `facility` null), known from the
 * occupants they ever had, so a bed stays listed once it is free again, plus the beds an
 * administrator listed, so a bed that was never occupied shows too, plus the beds a patient is
 * expected in; each with its state (db/repositories/bed-state-reads.ts).
 *
 * Every statement is an index search (test/db/beds-plan.test.ts): the beds from seen_beds (kept
 * by a trigger on each admission, schema.sql migration 9) and kept_beds by their key, the active
 * occupants from the partial index of active rows, and each bed's last discharge from the bed's
 * own rows in ward_occupants_bed (bed, facility). The cost grows with the beds and each bed's own
 * history, not with the facility's.
 */
export function createBedRepository(db: Database, expectedHours = 24) {
  const states = createBedStateReads(db, expectedHours)
  const seenBeds = db.prepare<[string], string>('SELECT bed FROM seen_beds WHERE facility = ?').pluck()
  const activeOccupants = db.prepare<{ facility: string | null }, WardOccupantRow>(
    `SELECT * FROM ward_occupants
     WHERE facility IS :facility AND discharged_at IS NULL
     ORDER BY occupied_at, id`,
  )
  const lastDischarge = db.prepare<{ facility: string | null; bed: string }, WardOccupantRow>(
    `SELECT * FROM ward_occupants
     WHERE bed = :bed AND facility IS :facility AND discharged_at IS NOT NULL
     ORDER BY discharged_at DESC LIMIT 1`,
  )

  const keptOf = db.prepare<[string], { bed: string; room: string | null }>(
    'SELECT bed, room FROM kept_beds WHERE facility = ?',
  )
  const keptAll = db.prepare<[], { facility: string; bed: string; room: string | null }>(
    'SELECT facility, bed, room FROM kept_beds ORDER BY facility, room, bed',
  )
  const keep = db.prepare(
    `INSERT INTO kept_beds (facility, bed, room, created_at) VALUES (?, ?, ?, ?)
     ON CONFLICT (facility, bed) DO UPDATE SET room = excluded.room`,
  )
  const keptOne = db.prepare<[string, string], { room: string | null }>(
    'SELECT room FROM kept_beds WHERE facility = ? AND bed = ?',
  )
  const unkeep = db.prepare('DELETE FROM kept_beds WHERE facility = ? AND bed = ?')
  const unsee = db.prepare('DELETE FROM seen_beds WHERE facility = ? AND bed = ?')
  const unstate = db.prepare('DELETE FROM bed_states WHERE facility = ? AND bed = ?')
  const housekeepingRow = db.prepare<
    [string, string],
    { state: string; since: number; setBy: string; note: string | null }
  >(`SELECT state, since, set_by AS setBy, note FROM bed_states WHERE facility = ? AND bed = ?`)
  function housekeepingOf(facility: string, bed: string): Housekeeping | undefined {
    const row = housekeepingRow.get(facility, bed)
    if (row === undefined) return undefined
    const { note, ...state } = row
    return note === null ? state : { ...state, note }
  }
  const activeCount = db
    .prepare<[string | null, string], number>(
      'SELECT count(*) FROM ward_occupants WHERE facility IS ? AND bed = ? AND discharged_at IS NULL',
    )
    .pluck()

  /** Every bed of the facility, ordered by room then bed (text order; the board sorts naturally). */
  function list(facility: string | null): BedState[] {
    // One read transaction: the statements see the same moment of the ward.
    return db
      .transaction(() => {
        const active = new Map<string, WardOccupant[]>()
        for (const row of activeOccupants.all({ facility })) {
          const record = toRecord(row)
          active.set(record.bed, [...(active.get(record.bed) ?? []), record])
        }
        const fields = states.ofFacility(facility)
        const beds = seenBeds.all(facility ?? NO_FACILITY).map((bed): BedState => {
          const state: BedState = { bed, active: active.get(bed) ?? [], state: 'free' }
          const last = lastDischarge.get({ facility, bed })
          if (last) state.lastDischarged = toRecord(last)
          // The room of its current occupant, else the one it was in when last used.
          const room = state.active.at(-1)?.room ?? state.lastDischarged?.room
          if (room !== undefined) state.room = room
          return state
        })
        // A listed bed shows even if never occupied; the room its administrator gave wins.
        const byBed = new Map(beds.map((state) => [state.bed, state]))
        for (const { bed, room } of keptOf.all(facility ?? NO_FACILITY)) {
          const state = byBed.get(bed) ?? { bed, active: [], state: 'free' }
          if (!byBed.has(bed)) beds.push(state)
          byBed.set(bed, state)
          if (room !== null) state.room = room
        }
        // A bed a patient is expected in shows before its first admission.
        for (const bed of fields.expectedBeds()) if (!byBed.has(bed)) beds.push({ bed, active: [], state: 'expected' })
        for (const state of beds)
          Object.assign(
            state,
            fields.of(
              state.bed,
              state.active.map((o) => o.id),
            ),
          )
        return beds.sort((a, b) => compare(a.room ?? '', b.room ?? '') || compare(a.bed, b.bed))
      })
      .deferred()
  }

  /** The bed as listed, the audit's record of it; null when it is not listed. */
  function listed(facility: string | null, bed: string): KeptBed | null {
    const row = keptOne.get(facility ?? NO_FACILITY, bed)
    if (row === undefined) return null
    return { facility, bed, ...(row.room === null ? {} : { room: row.room }) }
  }

  /** One audit entry (resource `beds`, the bed as its record) for a change of the list, if it changed. */
  function audit(
    by: ListChangedBy | undefined,
    change: { before: BedRecord | null; after: BedRecord | null; bed: KeptBed; at: number },
  ): void {
    const { before, after, bed, at } = change
    if (by === undefined || JSON.stringify(before) === JSON.stringify(after)) return
    const operation = before === null ? 'create' : after === null ? 'delete' : 'patch'
    const entry = { resource: 'beds', recordId: bed.bed, facility: bed.facility, operation, before, after } as const
    by.audit.append(by.actor, entry, at)
  }

  /**
   * Lists a bed (or changes its room); answers whether it was new. `by`: who, for the audit entry
   * written in the same transaction (the CLI's; a listing that changes nothing writes none).
   */
  function add(bed: KeptBed, now = Date.now(), by?: ListChangedBy): boolean {
    const facility = bed.facility ?? NO_FACILITY
    return writeAlone(
      db,
      db.transaction(() => {
        const before = listed(bed.facility, bed.bed)
        keep.run(facility, bed.bed, bed.room ?? null, now)
        audit(by, { before, after: listed(bed.facility, bed.bed), bed, at: now })
        return before === null
      }),
    )
  }

  /**
   * Takes a bed off the board (the list, the beds seen, its housekeeping state): 'removed'; or
   * 'unknown' when it had none of them. A bed with an active stay stays on the board: it is only
   * taken off the list ('unlisted'), or, not listed, left alone ('occupied'). A later admission
   * into a removed bed lists it again. `by`: as for `add`; the entry's record is the bed as listed
   * (or `{facility, bed}`), with the housekeeping state the removal took away.
   */
  function remove(
    facility: string | null,
    bed: string,
    by?: ListChangedBy,
    now = Date.now(),
  ): 'removed' | 'unlisted' | 'occupied' | 'unknown' {
    const key = facility ?? NO_FACILITY
    return writeAlone(
      db,
      db.transaction(() => {
        const before = listed(facility, bed)
        const unlisted = unkeep.run(key, bed).changes > 0
        if (activeCount.get(facility, bed)) {
          audit(by, { before, after: null, bed: { facility, bed }, at: now })
          return unlisted ? 'unlisted' : 'occupied'
        }
        const housekeeping = housekeepingOf(key, bed)
        const unseen = unsee.run(key, bed).changes > 0
        unstate.run(key, bed)
        // A bed known only from its stays, or only by its housekeeping state, was on the board but
        // not on the list: its record is the bed; the state it held goes with it, so it is recorded.
        const board = unlisted || unseen || housekeeping !== undefined ? (before ?? { facility, bed }) : null
        const record = board && housekeeping ? { ...board, housekeeping } : board
        audit(by, { before: record, after: null, bed: { facility, bed }, at: now })
        return record === null ? 'unknown' : 'removed'
      }),
    )
  }

  function kept(): KeptBed[] {
    return keptAll.all().map((row) => ({
      facility: row.facility === NO_FACILITY ? null : row.facility,
      bed: row.bed,
      ...(row.room === null ? {} : { room: row.room }),
    }))
  }

  return { list, add, remove, kept }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
