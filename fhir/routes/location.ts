import type { FastifyInstance, FastifyRequest } from 'fastify'
import { decodeCursor, type Entry, type Keyset, pageAfter, searchFingerprint } from '../bundle.js'
import type { EncounterView } from '../encounter.js'
import { isHashedId, namesOfId } from '../ids.js'
import type { Place } from '../location.js'
import { FhirError } from '../outcome.js'
import { searchOf, sendRememberedSearch, sendResource } from '../reply.js'
import { requireScope } from '../scope-hook.js'
import {
  includesOf,
  orLists,
  pageSize,
  parseToken,
  type SearchDeclaration,
  type SearchQuery,
  single,
  stringMatches,
  summaryCount,
  tokenMatches,
} from '../search.js'
import type { FhirViews } from '../views.js'

export const LOCATION_SEARCH: SearchDeclaration = {
  params: [
    { name: '_id', type: 'token', documentation: 'the Location id' },
    {
      name: 'name',
      type: 'string',
      modifiers: ['exact', 'contains'],
      documentation: 'the ward, room or bed name (starts with, any case)',
    },
    {
      name: 'partof',
      type: 'reference',
      documentation:
        'the Location it is part of (Location/<id> or <id>): the rooms and beds of a ward, the beds of a room',
    },
    {
      name: 'identifier',
      type: 'token',
      documentation: 'system|value; the value is facility, facility/room or facility/bed',
    },
    {
      name: 'operational-status',
      type: 'token',
      documentation: 'the bed status, HL7 table 0116 (http://terminology.hl7.org/CodeSystem/v2-0116|U for free beds)',
    },
  ],
  revinclude: ['Encounter:location'],
}

/** Every place the caller sees (each facility's ward, rooms and beds), read from the beds. */
function placesOf(views: FhirViews, facilities: (string | null)[]): Place[] {
  return facilities.flatMap((facility) => views.places(facility))
}

/** The facility an id names, when it is readable; undefined: any (a hashed id is compared). */
function facilitiesFor(request: FastifyRequest, id: string): (string | null)[] {
  const visible = request.server.repos.fhirReads.facilities(request.principal)
  for (const kind of ['ward', 'room', 'bed'] as const) {
    const names = namesOfId(kind, id)
    if (names !== null) {
      const facility = names[0] === '' ? null : (names[0] as string)
      return visible.includes(facility) ? [facility] : []
    }
    if (isHashedId(kind, id)) return visible
  }
  return []
}

function matches(place: Place, query: SearchQuery): boolean {
  const resource = place.resource as unknown as {
    id: string
    name: string
    partOf?: { reference: string }
    identifier: { system: string; value: string }[]
    operationalStatus?: { system: string; code: string }
  }
  const every = (name: string, test: (value: string, modifier?: string) => boolean) =>
    Object.entries(query)
      .filter(([key]) => key.split(':')[0] === name)
      .every(([key, values]) => values.every((value) => value.split(',').some((one) => test(one, key.split(':')[1]))))
  return (
    orLists(query, '_id').every((ids) => ids.includes(resource.id)) &&
    every('name', (value, modifier) => stringMatches(value, modifier, resource.name)) &&
    every('partof', (value) => resource.partOf?.reference === (value.includes('/') ? value : `Location/${value}`)) &&
    every('identifier', (value) =>
      resource.identifier.some((i) => tokenMatches(parseToken(value), i.system, i.value)),
    ) &&
    every('operational-status', (value) => {
      const status = resource.operationalStatus
      return status !== undefined && tokenMatches(parseToken(value), status.system, status.code)
    })
  )
}

/** The current encounters of the beds of the page (_revinclude=Encounter:location): in them, or expected in them. */
function currentEncounters(request: FastifyRequest, views: FhirViews, places: readonly Place[]): EncounterView[] {
  // A bed's id names its facility: an encounter of another facility never names it.
  const beds = new Set(places.filter((p) => p.currentEncounters.length > 0).map((p) => p.resource.id))
  if (beds.size === 0) return []
  return views
    .encounters(request.principal, { kind: 'active' })
    .filter((view) => view.currentBeds.some((bed) => beds.has(bed)))
}

/** The ward's places as FHIR Locations: read and search (docs/FHIR.md). */
export default async function locationRoutes(fastify: FastifyInstance, opts: { views: FhirViews }) {
  const { config } = fastify
  const { views } = opts

  fastify.get<{ Params: { id: string } }>(
    '/Location/:id',
    { config: { readAudit: 'get' }, schema: { hide: true }, preHandler: requireScope('Location', 'read') },
    async function readLocation(request, reply) {
      const id = request.params.id
      const found = placesOf(views, facilitiesFor(request, id)).find((p) => p.resource.id === id)
      if (found === undefined) throw new FhirError(404, 'not-found', `Location/${id} is not known`)
      return sendResource(request, reply, found.resource)
    },
  )

  fastify.get(
    '/Location',
    {
      config: { readAudit: 'list', fhirSearch: LOCATION_SEARCH },
      schema: { hide: true },
      preHandler: requireScope('Location', 'search'),
    },
    async function searchLocations(request, reply) {
      const query = searchOf(request, LOCATION_SEARCH)
      return sendRememberedSearch(request, reply, views, query, () => {
        const revinclude = includesOf(query, '_revinclude', LOCATION_SEARCH.revinclude ?? [])
        const count = pageSize(query, config.FHIR_PAGE_SIZE, config.FHIR_MAX_PAGE_SIZE)
        const fingerprint = searchFingerprint('Location', query)
        const cursor = single(query, '_cursor')
        const after: Keyset | null = cursor === undefined ? null : decodeCursor(cursor, fingerprint)
        const facilities = request.server.repos.fhirReads.facilities(request.principal)
        const found = placesOf(views, facilities)
          .filter((place) => matches(place, query))
          .sort((a, b) => (a.resource.id < b.resource.id ? -1 : a.resource.id > b.resource.id ? 1 : 0))
        if (summaryCount(query))
          return {
            resourceType: 'Location',
            query,
            fingerprint,
            total: found.length,
            entries: [],
          }
        const page = pageAfter(found, (place) => [place.resource.id], after, count)
        const entries: Entry[] = page.matches.map((place) => ({ resource: place.resource, mode: 'match' }))
        if (revinclude.has('Encounter:location'))
          for (const view of currentEncounters(request, views, page.matches))
            entries.push({ resource: view.resource, mode: 'include' })
        return {
          resourceType: 'Location',
          query,
          fingerprint,
          total: page.total,
          entries,
          next: page.next,
        }
      })
    },
  )
}
