import type { Database } from 'better-sqlite3'
import type { WardOccupant } from '../routes/ward-occupants/schema.js'
import { toRecord, type WardOccupantRow } from './ward-occupants.js'

/** A bed as the board shows it: who is in it now, and who left it last. */
export interface BedState {
  bed: string
  room?: string
  /** the occupants still in the bed, oldest first (one, unless BED_POLICY=shared) */
  active: WardOccupant[]
  /** the most recent discharge from the bed, if it ever had one */
  lastDischarged?: WardOccupant
}

/** A bed an administrator listed (`facility-service beds add`), occupied or not. */
export interface KeptBed {
  facility: string | null
  bed: string
  room?: string
}

/** In kept_beds, '' stands for "no facility" (facility ids are never empty): a key without NULL. */
const NO_FACILITY = ''

/**
 * The beds of one facility (or of the records without a facility: `facility` null), known from the
 * occupants they ever had, so a bed stays listed once it is free again, plus the beds an
 * administrator listed, so a bed that was never occupied shows too.
 *
 * Every statement is an index search on ward_occupants_facility_bed or ward_occupants_active
 * (test/db/beds-plan.test.ts): the distinct beds by a skip scan (the next bed after the last one,
 * one seek each), the active occupants from the partial index of active rows, and each bed's last
 * discharge as the first entry of its (facility, bed, discharged_at) range read backwards. A
 * facility with years of history costs one seek per bed, not a read of its history.
 */
export function createBedRepository(db: Database) {
  const distinctBeds = db
    .prepare<{ facility: string | null }, string>(
      `WITH RECURSIVE beds(bed) AS (
         SELECT min(bed) FROM ward_occupants WHERE facility IS :facility
         UNION ALL
         SELECT (SELECT min(w.bed) FROM ward_occupants w WHERE w.facility IS :facility AND w.bed > beds.bed)
         FROM beds WHERE beds.bed IS NOT NULL
       )
       SELECT bed FROM beds WHERE bed IS NOT NULL`,
    )
    .pluck()
  const activeOccupants = db.prepare<{ facility: string | null }, WardOccupantRow>(
    `SELECT * FROM ward_occupants
     WHERE facility IS :facility AND discharged_at IS NULL
     ORDER BY occupied_at, id`,
  )
  const lastDischarge = db.prepare<{ facility: string | null; bed: string }, WardOccupantRow>(
    `SELECT * FROM ward_occupants
     WHERE facility IS :facility AND bed = :bed AND discharged_at IS NOT NULL
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
  const keptOne = db.prepare<[string, string], number>('SELECT 1 FROM kept_beds WHERE facility = ? AND bed = ?').pluck()
  const unkeep = db.prepare('DELETE FROM kept_beds WHERE facility = ? AND bed = ?')

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
        const beds = distinctBeds.all({ facility }).map((bed): BedState => {
          const state: BedState = { bed, active: active.get(bed) ?? [] }
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
          const state = byBed.get(bed) ?? { bed, active: [] }
          if (!byBed.has(bed)) beds.push(state)
          if (room !== null) state.room = room
        }
        return beds.sort((a, b) => compare(a.room ?? '', b.room ?? '') || compare(a.bed, b.bed))
      })
      .deferred()
  }

  /** Lists a bed (or changes its room); answers whether it was new. */
  function add(bed: KeptBed, now = Date.now()): boolean {
    const facility = bed.facility ?? NO_FACILITY
    return db
      .transaction(() => {
        const existed = keptOne.get(facility, bed.bed) !== undefined
        keep.run(facility, bed.bed, bed.room ?? null, now)
        return !existed
      })
      .immediate()
  }

  /** Takes a bed off the list; answers whether it was listed. A bed with occupants stays on the board. */
  function remove(facility: string | null, bed: string): boolean {
    return unkeep.run(facility ?? NO_FACILITY, bed).changes > 0
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
