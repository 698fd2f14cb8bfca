import type { FastifyInstance } from 'fastify'
import type { Scope } from '../db/query/list.js'
import { createReadMemo } from '../db/read-memo.js'
import type { StayFilter } from '../db/repositories/fhir-reads.js'
import { type EncounterSystems, type EncounterView, toEncounter } from './encounter.js'
import { type Place, wardPlaces } from './location.js'

/**
 * The ward as FHIR resources, made from the records and remembered until the database changes
 * (db/read-memo.ts): a dashboard polling the beds, or a client paging, asks again and again for a
 * ward that has not changed meanwhile. Places and encounters are remembered a minute at most besides,
 * since a bed's expectation runs out with time alone (BED_EXPECTED_HOURS).
 */
export function createFhirViews(fastify: FastifyInstance, systems: EncounterSystems, cacheBytes: number) {
  const { db, repos } = fastify
  // FHIR_CACHE_BYTES is the whole budget: the views and the answers built from them get half each.
  const half = Math.floor(cacheBytes / 2)
  const memo = createReadMemo<Place[] | EncounterView[]>(db, half, (value) => JSON.stringify(value).length * 2)

  function remembered<T extends Place[] | EncounterView[]>(key: string, compute: () => T): T {
    return db.transaction(() => memo.remember(key, compute) as T).deferred()
  }

  const answers = createReadMemo<{ json: string; total: number }>(db, half, (value) => value.json.length * 2)

  return {
    /**
     * A search's answer, keyed by the caller's facility and the search (`key`); a minute at most,
     * as the places it may show.
     */
    answer(scope: Scope, key: string, compute: () => { json: string; total: number }) {
      const minute = Math.floor(Date.now() / 60_000)
      const scoped = `${scope.facility === null ? '-' : `=${scope.facility}`} ${minute} ${key}`
      return db.transaction(() => answers.remember(scoped, compute)).deferred()
    },
    /** The ward, rooms and beds of one facility the caller may see (the caller checks that). */
    places(facility: string | null): Place[] {
      const minute = Math.floor(Date.now() / 60_000)
      return remembered(`places ${facility === null ? '-' : `=${facility}`} ${minute}`, () =>
        wardPlaces(facility, repos.beds.list(facility)),
      )
    },
    /** The encounters a filter finds among those the scope sees; a minute at most, as the places. */
    encounters(scope: Scope, filter: StayFilter): EncounterView[] {
      const minute = Math.floor(Date.now() / 60_000)
      const key = `encounters ${scope.facility === null ? '-' : `=${scope.facility}`} ${minute} ${JSON.stringify(filter)}`
      return remembered(key, () =>
        repos.fhirReads.encounters(scope, filter).map((found) => toEncounter(found, systems)),
      )
    },
  }
}

export type FhirViews = ReturnType<typeof createFhirViews>
