import type { FastifyReply, FastifyRequest } from 'fastify'
import { noteListTotal } from '../plugins/read-audit.js'
import { type Entry, encodeCursor, type Keyset, type Resource, resourceJson, searchsetJson } from './bundle.js'
import { etagOf, notModified } from './meta.js'
import { isStrict, knownParams, type SearchDeclaration, type SearchQuery, searchQuery } from './search.js'
import type { FhirViews } from './views.js'

/** The endpoint's base URL: FHIR_BASE_URL, else from the request (behind a trusted proxy, its Host). */
export function baseUrl(request: FastifyRequest): string {
  const configured = request.server.config.FHIR_BASE_URL
  if (configured !== '') return configured.replace(/\/+$/, '')
  return `${request.protocol}://${request.host}/fhir`
}

/** A read: the resource with its ETag and Last-Modified; 304 when If-None-Match names its version. */
export function sendResource(request: FastifyRequest, reply: FastifyReply, resource: Resource) {
  reply.header('etag', etagOf(resource))
  if (resource.meta?.lastUpdated !== undefined)
    reply.header('last-modified', new Date(resource.meta.lastUpdated).toUTCString())
  if (notModified(request.headers['if-none-match'], resource)) return reply.code(304).send()
  return reply.send(resourceJson(resource))
}

/** The search's parameters: the ones it does not know dropped, or with `Prefer: handling=strict` a 400. */
export function searchOf(request: FastifyRequest, declaration: SearchDeclaration): SearchQuery {
  return knownParams(searchQuery(request.query), declaration, isStrict(request.headers.prefer))
}

function queryText(query: SearchQuery): string {
  const params = new URLSearchParams()
  for (const [name, values] of Object.entries(query)) for (const value of values) params.append(name, value)
  const text = params.toString()
  return text === '' ? '' : `?${text}`
}

export interface SearchAnswer {
  resourceType: string
  query: SearchQuery
  fingerprint: string
  total: number
  entries: Entry[]
  next?: Keyset
}

/**
 * The searchset Bundle of a search, its self link the search as understood (unknown parameters
 * left out) and its next link the same search with the cursor after this page; the total is noted
 * for the read log.
 */
/** The searchset Bundle's JSON text of a search: its self link the search as understood (unknown parameters left out), its next link the same search with the cursor after this page. */
export function searchText(request: FastifyRequest, answer: SearchAnswer): { json: string; total: number } {
  const base = baseUrl(request)
  const self = `${base}/${answer.resourceType}${queryText(answer.query)}`
  const { _cursor: _ignored, ...rest } = answer.query
  const nextUrl =
    answer.next === undefined
      ? undefined
      : `${base}/${answer.resourceType}${queryText({ ...rest, _cursor: [encodeCursor(answer.fingerprint, answer.next)] })}`
  const json = searchsetJson({ base, entries: answer.entries, total: answer.total, selfUrl: self, nextUrl })
  return { json, total: answer.total }
}

/** Sends a search's Bundle; the total is noted for the read log. */
export function sendSearch(request: FastifyRequest, reply: FastifyReply, answer: SearchAnswer) {
  const { json, total } = searchText(request, answer)
  noteListTotal(request, total)
  return reply.send(json)
}

/**
 * Sends a search's Bundle remembered with the ward (fhir/views.ts) while the database is
 * unchanged: the same search (route and parameters) by a caller of the same facility, at the same
 * base, is the same text.
 */
export function sendRememberedSearch(
  request: FastifyRequest,
  reply: FastifyReply,
  views: FhirViews,
  query: SearchQuery,
  compute: () => SearchAnswer,
) {
  const key = `${request.routeOptions.url} ${baseUrl(request)} ${JSON.stringify(query)}`
  const { json, total } = views.answer(request.principal, key, () => searchText(request, compute()))
  noteListTotal(request, total)
  return reply.send(json)
}
