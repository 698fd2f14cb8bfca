import type { FastifyReply, FastifyRequest } from 'fastify'
import { noteListTotal } from '../plugins/read-audit.js'
import { type Entry, encodeCursor, type Keyset, type Resource, searchset } from './bundle.js'
import { etagOf, notModified } from './meta.js'
import { isStrict, knownParams, type SearchDeclaration, type SearchQuery, searchQuery } from './search.js'

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
  return reply.send(JSON.stringify(resource))
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
export function sendSearch(request: FastifyRequest, reply: FastifyReply, answer: SearchAnswer) {
  noteListTotal(request, answer.total)
  const base = baseUrl(request)
  const self = `${base}/${answer.resourceType}${queryText(answer.query)}`
  const { _cursor: _ignored, ...rest } = answer.query
  const nextUrl =
    answer.next === undefined
      ? undefined
      : `${base}/${answer.resourceType}${queryText({ ...rest, _cursor: [encodeCursor(answer.fingerprint, answer.next)] })}`
  const bundle = searchset({ base, entries: answer.entries, total: answer.total, selfUrl: self, nextUrl })
  return reply.send(JSON.stringify(bundle))
}
