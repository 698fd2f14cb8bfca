import type { Database, Statement } from 'better-sqlite3'
import { expectationLive } from '../../domain/bed-states.js'
import type { WardOccupant } from '../../schemas/ward-occupants.js'
import type { Scope } from '../query/list.js'
import { type ExpectationRow, NO_FACILITY } from './bed-state-reads.js'
import { toRecord, type WardOccupantRow } from './ward-occupants.js'

/** Which encounters a FHIR search starts from; the caller checks every condition on what it gets. */
export type StayFilter =
  | { kind: 'all' }
  /** the current encounters: those with an active stay or a live expectation of a bed */
  | { kind: 'active' }
  | { kind: 'encounters'; encounters: readonly string[] }
  /** encounters with a stay of one of these patients */
  | { kind: 'subjects'; subjects: readonly string[] }
  /** encounters with a stay in, or an expectation of, a bed of one of these names */
  | { kind: 'beds'; beds: readonly string[] }

export interface EncounterStays {
  facility: string | null
  encounter: string
  /** oldest first (occupied_at, then id); none for a pending admission */
  stays: WardOccupant[]
  /** the live expectations (A14, A15) of beds for the encounter in the facility, in bed order */
  expectations: ExpectationRow[]
}

interface ExpectationOfFacility extends ExpectationRow {
  facility: string
}

/**
 * What the FHIR view (fhir/) reads besides the beds: the facilities a token sees, and the stays of
 * encounters, grouped per encounter number and facility. The facility scope is applied here, before
 * any filter: every statement that finds encounters names the caller's facility when it has one.
 */
export function createFhirReads(db: Database, expectedHours: number) {
  const facilityRows = db
    .prepare<[], string>(
      `SELECT facility FROM seen_beds UNION SELECT facility FROM kept_beds UNION SELECT facility FROM bed_expectations
       UNION SELECT coalesce(facility, '') FROM ward_occupants`,
    )
    .pluck()
  const where = (scope: Scope) => (scope.facility === null ? '1' : 'facility = :facility')
  /** The parameters `where(scope)` names. */
  const scopeParams = (scope: Scope): Record<string, unknown> =>
    scope.facility === null ? {} : { facility: scope.facility }
  /** The encounter numbers with a stay in, or an expectation of, a bed named in `:list`. */
  const bedEncounters = (scope: Scope) => {
    const beds = 'bed IN (SELECT value FROM json_each(:list))'
    return `SELECT encounter FROM ward_occupants WHERE ${beds} AND ${where(scope)}
       UNION SELECT encounter FROM bed_expectations WHERE ${beds} AND ${where(scope)}`
  }
  const statements = new Map<string, Statement>()
  /** The statement of this text, prepared once (each filter and scope has a text of its own). */
  function prepared(sql: string): Statement {
    let statement = statements.get(sql)
    if (!statement) {
      statement = db.prepare(sql)
      statements.set(sql, statement)
    }
    return statement
  }
  function rowsOf(sql: string, params: Record<string, unknown>): WardOccupantRow[] {
    return prepared(sql).all(params) as WardOccupantRow[]
  }

  /**
   * One statement per search: the stays of every encounter number the filter names (through the
   * index of encounter numbers), in the caller's facility, grouped by facility and number. The
   * filter names numbers, not facilities: the groups it did not mean are left out after (`keep`).
   */
  function stays(
    scope: Scope,
    filter: StayFilter,
  ): { rows: WardOccupantRow[]; keep: (group: EncounterStays) => boolean } {
    const params = scopeParams(scope)
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
        // Every stay of an expected encounter too: one in progress or finished is not a planned one.
        return {
          rows: rowsOf(
            select(
              `SELECT encounter FROM ward_occupants WHERE ${where(scope)} AND discharged_at IS NULL
               UNION SELECT encounter FROM bed_expectations WHERE ${where(scope)}`,
            ),
            params,
          ),
          keep: (group) => group.expectations.length > 0 || group.stays.some((stay) => stay.dischargedAt === undefined),
        }
      case 'encounters':
        return {
          rows: rowsOf(select('SELECT value FROM json_each(:list)'), {
            ...params,
            list: JSON.stringify(filter.encounters),
          }),
          keep: () => true,
        }
      case 'beds':
        return {
          rows: rowsOf(select(bedEncounters(scope)), { ...params, list: JSON.stringify(filter.beds) }),
          keep: () => true,
        }
      case 'subjects': {
        const subjects = new Set(filter.subjects)
        const numbers = `SELECT encounter FROM ward_occupants WHERE ${where(scope)} AND occupied_by IN (SELECT value FROM json_each(:list))`
        return {
          rows: rowsOf(select(numbers), { ...params, list: JSON.stringify(filter.subjects) }),
          keep: (group) => group.stays.some((stay) => subjects.has(stay.occupiedBy)),
        }
      }
    }
  }

  /**
   * The live expectations of the encounters the filter may find, in the caller's facility; lapsed
   * ones (BED_EXPECTED_HOURS) are gone, exactly as GET /beds reads them.
   */
  function expectations(scope: Scope, filter: StayFilter, now: number): ExpectationOfFacility[] {
    const params = scopeParams(scope)
    const select = (condition: string) =>
      `SELECT facility, bed, encounter, kind, since FROM bed_expectations WHERE ${where(scope)} AND ${condition}
       ORDER BY facility, encounter, bed`
    let rows: ExpectationOfFacility[]
    if (filter.kind === 'encounters')
      rows = rowsOf(select('encounter IN (SELECT value FROM json_each(:list))'), {
        ...params,
        list: JSON.stringify(filter.encounters),
      }) as unknown as ExpectationOfFacility[]
    else if (filter.kind === 'subjects')
      rows = rowsOf(
        select(
          `encounter IN (SELECT encounter FROM ward_occupants WHERE ${where(scope)} AND occupied_by IN (SELECT value FROM json_each(:list)))`,
        ),
        { ...params, list: JSON.stringify(filter.subjects) },
      ) as unknown as ExpectationOfFacility[]
    else rows = rowsOf(select('1'), params) as unknown as ExpectationOfFacility[]
    return rows.filter((row) => expectationLive(row.since, now, expectedHours))
  }

  /** The stays and live expectations of each encounter the filter finds, in one read transaction. */
  function encounters(scope: Scope, filter: StayFilter, now = Date.now()): EncounterStays[] {
    return db
      .transaction(() => {
        const { rows, keep } = stays(scope, filter)
        const groups = new Map<string, EncounterStays>()
        const groupOf = (facility: string | null, encounter: string) => {
          const key = JSON.stringify([facility, encounter])
          let group = groups.get(key)
          if (group === undefined) {
            group = { facility, encounter, stays: [], expectations: [] }
            groups.set(key, group)
          }
          return group
        }
        for (const row of rows) groupOf(row.facility, row.encounter).stays.push(toRecord(row))
        for (const { facility, ...expectation } of expectations(scope, filter, now))
          groupOf(facility === NO_FACILITY ? null : facility, expectation.encounter).expectations.push(expectation)
        return [...groups.values()].filter(keep)
      })
      .deferred()
  }

  return {
    /**
     * Whether a filter whose read grows with the ward's history would read more than `limit`
     * stays: every stay of the scope (`all`), or every stay of the encounters ever in the named
     * beds (`beds`: naming every bed is the whole history again). Counted through the indexes and
     * never past `limit + 1`; the other filters read what a patient or an encounter had, or the
     * current encounters, and are not counted.
     */
    staysBeyond(scope: Scope, filter: StayFilter, limit: number): boolean {
      if (filter.kind !== 'all' && filter.kind !== 'beds') return false
      const narrowing = filter.kind === 'beds' ? ` AND encounter IN (${bedEncounters(scope)})` : ''
      const count = prepared(
        `SELECT count(*) FROM (SELECT 1 FROM ward_occupants WHERE ${where(scope)}${narrowing} LIMIT :limit)`,
      )
      const beds = filter.kind === 'beds' ? { list: JSON.stringify(filter.beds) } : {}
      const params = { ...scopeParams(scope), ...beds, limit: limit + 1 }
      return (count.pluck().get(params) as number) > limit
    },
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
