import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { StayFilter } from '../../db/repositories/fhir-reads.js'
import { decodeCursor, type Entry, type Keyset, pageAfter, type Resource, searchFingerprint } from '../bundle.js'
import type { EncounterSystems, EncounterView } from '../encounter.js'
import { isHashedId, namesOfId } from '../ids.js'
import { FhirError } from '../outcome.js'
import { searchOf, sendRememberedSearch, sendResource } from '../reply.js'
import { requireScope } from '../scope-hook.js'
import {
  includesOf,
  orLists,
  pageSize,
  parseDate,
  parseToken,
  periodMatches,
  type SearchDeclaration,
  type SearchQuery,
  single,
  sortOf,
  summaryCount,
  tokenMatches,
} from '../search.js'
import type { FhirViews } from '../views.js'

export const ENCOUNTER_SEARCH: SearchDeclaration = {
  params: [
    { name: '_id', type: 'token', documentation: 'the Encounter id' },
    { name: '_lastUpdated', type: 'date', documentation: 'when a stay of the encounter last began or ended' },
    { name: 'identifier', type: 'token', documentation: 'the encounter (visit) number: FHIR_ENCOUNTER_SYSTEM|number' },
    {
      name: 'status',
      type: 'token',
      documentation: 'planned (expected in a bed, no stay yet), in-progress (a stay is active) or finished',
    },
    {
      name: 'location',
      type: 'reference',
      documentation: 'a bed the encounter stayed in or is expected in (Location/<id> or <id>)',
    },
    {
      name: 'subject',
      type: 'reference',
      modifiers: ['identifier'],
      documentation: "only as subject:identifier: the patient's account, FHIR_PATIENT_SYSTEM|account",
    },
    {
      name: 'patient',
      type: 'reference',
      modifiers: ['identifier'],
      documentation: "only as patient:identifier: the patient's account, FHIR_PATIENT_SYSTEM|account",
    },
    { name: 'date', type: 'date', documentation: 'the encounter period (ge, le, gt, lt, eq, ne, sa, eb)' },
  ],
  include: ['Encounter:location'],
  sort: ['date', '_lastUpdated'],
}

/** The parameters that take a modifier only (`subject` alone would need Patient resources). */
const MODIFIER_ONLY = new Set(['subject', 'patient'])

export function encounterSystems(config: FastifyInstance['config']): EncounterSystems {
  return {
    patient: config.FHIR_PATIENT_SYSTEM,
    practitioner: config.FHIR_PRACTITIONER_SYSTEM,
    encounter: config.FHIR_ENCOUNTER_SYSTEM,
    classCode: config.FHIR_ENCOUNTER_CLASS,
  }
}

/** The encounter number and facility of a readable id, or 'scan' for a hashed one. */
function keyOfId(id: string): { facility: string | null; encounter: string } | 'scan' | null {
  const names = namesOfId('encounter', id)
  if (names !== null && names.length === 2)
    return { facility: names[0] === '' ? null : (names[0] as string), encounter: names[1] as string }
  return isHashedId('encounter', id) ? 'scan' : null
}

const reference = (value: string) => (value.includes('/') ? value.slice(value.lastIndexOf('/') + 1) : value)

/** The bed name of a readable bed id; 'scan' for a hashed one; null for an id no bed has. */
function bedOfLocation(id: string): string | null | 'scan' {
  if (isHashedId('bed', id)) return 'scan'
  return namesOfId('bed', id)?.[1] ?? null
}

/** The statuses of the current encounters: an active stay, or a bed expecting them. */
const CURRENT = new Set(['in-progress', 'planned'])

/** Where the search starts: the most selective condition it has (every condition is checked after). */
function startOf(query: SearchQuery): StayFilter {
  const first = (name: string) => orLists(query, name)[0]
  const ids = first('_id')
  if (ids !== undefined) {
    const keys = ids.map(keyOfId)
    if (keys.every((k) => k !== 'scan'))
      return { kind: 'encounters', encounters: keys.flatMap((k) => (k === null ? [] : [k.encounter])) }
  }
  // `system|` is every code of the system (tokenMatches): it names no number or account to start from.
  const naming = (values: string[] | undefined): values is string[] =>
    values?.every((v) => {
      const token = parseToken(v)
      return token.code !== '' || token.system === undefined
    }) ?? false
  const numbers = first('identifier')
  if (naming(numbers)) return { kind: 'encounters', encounters: numbers.map((v) => parseToken(v).code) }
  const subjects = first('subject:identifier') ?? first('patient:identifier')
  if (naming(subjects)) return { kind: 'subjects', subjects: subjects.map((v) => parseToken(v).code) }
  // The current encounters before the beds: they are as many as the ward has beds, where a bed's
  // stays grow with its history (a location search past FHIR_MAX_SCAN_STAYS is refused).
  const statuses = first('status')
  if (statuses?.every((s) => CURRENT.has(parseToken(s).code))) return { kind: 'active' }
  const locations = first('location')
  if (locations !== undefined) {
    const beds = locations.map((v) => bedOfLocation(reference(v)))
    if (beds.every((b) => b !== 'scan')) return { kind: 'beds', beds: beds.filter((b) => b !== null) }
  }
  return { kind: 'all' }
}

function matches(view: EncounterView, query: SearchQuery, systems: EncounterSystems): boolean {
  const each = (name: string, test: (value: string) => boolean) => orLists(query, name).every((ors) => ors.some(test))
  const subject = (value: string) =>
    view.subject !== null && tokenMatches(parseToken(value), systems.patient, view.subject)
  return (
    each('_id', (v) => v === view.resource.id) &&
    each('identifier', (v) => tokenMatches(parseToken(v), systems.encounter, view.encounter)) &&
    each('status', (v) => tokenMatches(parseToken(v), 'http://hl7.org/fhir/encounter-status', view.status)) &&
    each('location', (v) => view.beds.includes(reference(v))) &&
    each('subject:identifier', subject) &&
    each('patient:identifier', subject) &&
    // A planned encounter has no period: no date matches it.
    (query.date ?? []).every((v) => view.start !== null && periodMatches(parseDate('date', v), view.start, view.end)) &&
    (query._lastUpdated ?? []).every((v) =>
      periodMatches(parseDate('_lastUpdated', v), view.lastUpdated, view.lastUpdated + 1),
    )
  )
}

/** The bed Locations the encounters of a page stayed in (_include=Encounter:location). */
function includedLocations(views: FhirViews, page: readonly EncounterView[]): Resource[] {
  const wanted = new Map<string | null, Set<string>>()
  for (const view of page) {
    const set = wanted.get(view.facility) ?? new Set<string>()
    for (const bed of view.beds) set.add(bed)
    wanted.set(view.facility, set)
  }
  const out: Resource[] = []
  for (const [facility, beds] of wanted) {
    const places = views.places(facility)
    for (const place of places) if (beds.has(place.resource.id)) out.push(place.resource)
  }
  return out
}

/** The ward's encounters as FHIR Encounters: read and search; every answer is a patient read. */
export default async function encounterRoutes(fastify: FastifyInstance, opts: { views: FhirViews }) {
  const { config } = fastify
  const { views } = opts
  const systems = encounterSystems(config)
  const scanLimit = config.FHIR_MAX_SCAN_STAYS

  /**
   * The encounters a filter finds; one that names nothing to start from reads every stay the
   * scope ever had, and one from beds every stay of the encounters ever in them: each refused past
   * FHIR_MAX_SCAN_STAYS, since on a ward with years of history it would hold the event loop (every
   * other request of the ward) for seconds and its memory for as long.
   */
  function encountersOf(request: FastifyRequest, filter: StayFilter): EncounterView[] {
    if (fastify.repos.fhirReads.staysBeyond(request.principal, filter, scanLimit))
      throw new FhirError(
        400,
        'too-costly',
        filter.kind === 'beds'
          ? `this would read more than ${scanLimit} stays of these beds' history (FHIR_MAX_SCAN_STAYS): fewer beds, or add status=in-progress or planned, identifier, subject:identifier or _id`
          : `this would read more than ${scanLimit} stays of the ward's history (FHIR_MAX_SCAN_STAYS): search with status=in-progress or planned, identifier, subject:identifier, location or _id`,
      )
    return views.encounters(request.principal, filter)
  }

  fastify.get<{ Params: { id: string } }>(
    '/Encounter/:id',
    { config: { readAudit: 'get' }, schema: { hide: true }, preHandler: requireScope('Encounter', 'read') },
    async function readEncounter(request, reply) {
      const id = request.params.id
      const key = keyOfId(id)
      const filter: StayFilter | null =
        key === null ? null : key === 'scan' ? { kind: 'all' } : { kind: 'encounters', encounters: [key.encounter] }
      const found = filter === null ? undefined : encountersOf(request, filter).find((view) => view.resource.id === id)
      if (found === undefined) throw new FhirError(404, 'not-found', `Encounter/${id} is not known`)
      return sendResource(request, reply, found.resource)
    },
  )

  fastify.get(
    '/Encounter',
    {
      config: { readAudit: 'list', fhirSearch: ENCOUNTER_SEARCH },
      schema: { hide: true },
      preHandler: requireScope('Encounter', 'search'),
    },
    async function searchEncounters(request, reply) {
      const query = searchOf(request, ENCOUNTER_SEARCH)
      for (const name of MODIFIER_ONLY)
        if (query[name] !== undefined)
          throw new FhirError(
            400,
            'not-supported',
            `${name} is searched by identifier only: ${name}:identifier=system|value`,
            [name],
          )
      return sendRememberedSearch(request, reply, views, query, () => {
        const include = includesOf(query, '_include', ENCOUNTER_SEARCH.include ?? [])
        const sort = sortOf(query, ENCOUNTER_SEARCH.sort ?? [])
        const count = pageSize(query, config.FHIR_PAGE_SIZE, config.FHIR_MAX_PAGE_SIZE)
        const fingerprint = searchFingerprint('Encounter', query)
        const cursor = single(query, '_cursor')
        const after: Keyset | null = cursor === undefined ? null : decodeCursor(cursor, fingerprint)
        const keyOf = (view: EncounterView): Keyset => {
          if (sort === undefined) return [view.resource.id]
          const value = sort.key === 'date' ? view.start : view.lastUpdated
          // Without a period (planned), after the others in either direction.
          if (value === null) return [1, 0, view.resource.id]
          return [0, sort.descending ? -value : value, view.resource.id]
        }
        const found = encountersOf(request, startOf(query)).filter((view) => matches(view, query, systems))
        found.sort((a, b) => {
          const [x, y] = [keyOf(a), keyOf(b)]
          for (let i = 0; i < x.length; i++)
            if (x[i] !== y[i]) return (x[i] as number | string) < (y[i] as number | string) ? -1 : 1
          return 0
        })
        if (summaryCount(query))
          return {
            resourceType: 'Encounter',
            query,
            fingerprint,
            total: found.length,
            entries: [],
          }
        const page = pageAfter(found, keyOf, after, count)
        const entries: Entry[] = page.matches.map((view) => ({ resource: view.resource, mode: 'match' }))
        if (include.has('Encounter:location'))
          for (const resource of includedLocations(views, page.matches)) entries.push({ resource, mode: 'include' })
        return {
          resourceType: 'Encounter',
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
