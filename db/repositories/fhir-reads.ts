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
  const where = (scope: Scope) => (scope.facility === null ? '1' : 'facility = :facility')
  const statements = new Map<string, ReturnType<typeof db.prepare>>()
  function rowsOf(sql: string, params: Record<string, unknown>): WardOccupantRow[] {
    let statement = statements.get(sql)
    if (!statement) {
      statement = db.prepare(sql)
      statements.set(sql, statement)
    }
    return statement.all(params) as WardOccupantRow[]
  }

  /**
   * One statement per search: the stays of every encounter number the filter names (through the
   * index of encounter numbers), in the caller's facility, grouped by facility and number. The
   * filter names numbers, not facilities: the groups it did not mean are left out after (`keep`).
   */
  function stays(
    scope: Scope,
    filter: StayFilter,
  ): { rows: WardOccupantRow[]; keep: (stays: WardOccupant[]) => boolean } {
    const params: Record<string, unknown> = scope.facility === null ? {} : { facility: scope.facility }
    const select = (numbers: string) =>
      `SELECT * FROM ward_occupants WHERE ${where(scope)} AND encounter IN (${numbers})
       ORDER BY coalesce(facility, ''), encounter, occupied_at, id`
    switch (filter.kind) {
      case 'all':
        return {
          rows: rowsOf(
            `SELECT * FROM ward_occupants WHERE ${where(scope)} ORDER BY coalesce(facility, ''), encounter, occupied_at, id`,
            params,
          ),
          keep: () => true,
        }
      case 'active':
        return {
          rows: rowsOf(
            select(`SELECT encounter FROM ward_occupants WHERE ${where(scope)} AND discharged_at IS NULL`),
            params,
          ),
          keep: (group) => group.some((stay) => stay.dischargedAt === undefined),
        }
      case 'encounters':
        return {
          rows: rowsOf(select('SELECT value FROM json_each(:list)'), {
            ...params,
            list: JSON.stringify(filter.encounters),
          }),
          keep: () => true,
        }
      case 'subjects': {
        const subjects = new Set(filter.subjects)
        const numbers = `SELECT encounter FROM ward_occupants WHERE ${where(scope)} AND occupied_by IN (SELECT value FROM json_each(:list))`
        return {
          rows: rowsOf(select(numbers), { ...params, list: JSON.stringify(filter.subjects) }),
          keep: (group) => group.some((stay) => subjects.has(stay.occupiedBy)),
        }
      }
    }
  }

  /** The stays of each encounter the filter finds, in one read transaction. */
  function encounters(scope: Scope, filter: StayFilter): EncounterStays[] {
    return db
      .transaction(() => {
        const { rows, keep } = stays(scope, filter)
        const out: EncounterStays[] = []
        let current: EncounterStays | undefined
        for (const row of rows) {
          if (current === undefined || current.facility !== row.facility || current.encounter !== row.encounter) {
            current = { facility: row.facility, encounter: row.encounter, stays: [] }
            out.push(current)
          }
          current.stays.push(toRecord(row))
        }
        return out.filter((group) => keep(group.stays))
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
