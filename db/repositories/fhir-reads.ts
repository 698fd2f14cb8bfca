import type { Database } from 'better-sqlite3'
import type { WardOccupant } from '../../schemas/ward-occupants.js'
import type { Scope } from '../query/list.js'
import { NO_FACILITY } from './bed-state-reads.js'
import { toRecord, type WardOccupantRow } from './ward-occupants.js'

/** Which encounters a FHIR search starts from; the caller checks every condition on what it gets. */
export type StayFilter =
  | { kind: 'all' }
  /** encounters with an active stay */
  | { kind: 'active' }
  | { kind: 'encounters'; encounters: readonly string[] }
  /** encounters with a stay of one of these patients */
  | { kind: 'subjects'; subjects: readonly string[] }

export interface EncounterStays {
  facility: string | null
  encounter: string
  /** oldest first (occupied_at, then id) */
  stays: WardOccupant[]
}

interface Key {
  facility: string | null
  encounter: string
}

/**
 * What the FHIR view (fhir/) reads besides the beds: the facilities a token sees, and the stays of
 * encounters, grouped per encounter number and facility. The facility scope is applied here, before
 * any filter: every statement that finds encounters names the caller's facility when it has one.
 */
export function createFhirReads(db: Database) {
  const facilityRows = db
    .prepare<[], string>(
      `SELECT facility FROM seen_beds UNION SELECT facility FROM kept_beds UNION SELECT facility FROM bed_expectations
       UNION SELECT coalesce(facility, '') FROM ward_occupants`,
    )
    .pluck()
  const staysOfKey = db.prepare<[string, string | null], WardOccupantRow>(
    'SELECT * FROM ward_occupants WHERE encounter = ? AND facility IS ? ORDER BY occupied_at, id',
  )
  const where = (scope: Scope) => (scope.facility === null ? '1' : 'facility = :facility')
  const keyStatements = new Map<string, ReturnType<typeof db.prepare>>()
  function keysOf(sql: string) {
    let statement = keyStatements.get(sql)
    if (!statement) {
      statement = db.prepare(sql)
      keyStatements.set(sql, statement)
    }
    return statement as unknown as { all(params: Record<string, unknown>): Key[] }
  }

  function keys(scope: Scope, filter: StayFilter): Key[] {
    const params: Record<string, unknown> = scope.facility === null ? {} : { facility: scope.facility }
    const select = 'SELECT DISTINCT facility, encounter FROM ward_occupants'
    switch (filter.kind) {
      case 'all':
        return keysOf(`${select} WHERE ${where(scope)}`).all(params)
      case 'active':
        return keysOf(`${select} WHERE ${where(scope)} AND discharged_at IS NULL`).all(params)
      case 'encounters':
        return filter.encounters.flatMap((encounter) =>
          keysOf(`${select} WHERE ${where(scope)} AND encounter = :encounter`).all({ ...params, encounter }),
        )
      case 'subjects':
        return filter.subjects.flatMap((subject) =>
          keysOf(`${select} WHERE ${where(scope)} AND occupied_by = :subject`).all({ ...params, subject }),
        )
    }
  }

  /** The stays of each encounter the filter finds, in one read transaction. */
  function encounters(scope: Scope, filter: StayFilter): EncounterStays[] {
    return db
      .transaction(() => {
        const seen = new Set<string>()
        const out: EncounterStays[] = []
        for (const key of keys(scope, filter)) {
          const id = `${key.facility ?? NO_FACILITY}\u0000${key.encounter}`
          if (seen.has(id)) continue
          seen.add(id)
          const stays = staysOfKey.all(key.encounter, key.facility).map(toRecord)
          if (stays.length > 0) out.push({ facility: key.facility, encounter: key.encounter, stays })
        }
        return out
      })
      .deferred()
  }

  return {
    /** The facilities the caller sees (null: the records without one). */
    facilities(scope: Scope): (string | null)[] {
      if (scope.facility !== null) return [scope.facility]
      return facilityRows
        .all()
        .map((f) => (f === NO_FACILITY ? null : f))
        .sort((a, b) => (a ?? '').localeCompare(b ?? ''))
    },
    encounters,
  }
}

export type FhirReads = ReturnType<typeof createFhirReads>
