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

/**
 * The beds of one facility (or of the records without a facility: `facility` null), known from the
 * occupants they ever had, so a bed stays listed once it is free again. Read-only.
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

  /** Every bed of the facility, ordered by room then bed (text order; the board sorts naturally). */
  function list(facility: string | null): BedState[] {
    // One read transaction: the three statements see the same moment of the ward.
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
        return beds.sort((a, b) => compare(a.room ?? '', b.room ?? '') || compare(a.bed, b.bed))
      })
      .deferred()
  }

  return { list }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
