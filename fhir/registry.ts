import type { SearchDeclaration, SearchParamType } from './search.js'
import { RESULT_PARAMS } from './search.js'

/**
 * The FHIR interactions the endpoint has, noted as its routes are registered (fhir/index.ts): the
 * CapabilityStatement is made from them, so it lists exactly what is there.
 */
export type Interaction =
  | 'read'
  | 'vread'
  | 'update'
  | 'patch'
  | 'delete'
  | 'search-type'
  | 'create'
  | 'history-instance'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A FHIR search route's parameters, includes and sorts (fhir/search.ts). */
    fhirSearch?: SearchDeclaration
  }
}

export interface FhirRoute {
  resourceType: string
  interaction: Interaction
  search?: SearchDeclaration
}

const INSTANCE = /^\/fhir\/([A-Z][A-Za-z]+)\/:[A-Za-z]+$/
const TYPE = /^\/fhir\/([A-Z][A-Za-z]+)$/

/** Types of the usual parameters of a route that declares none but has a querystring schema. */
const USUAL_TYPES: Readonly<Record<string, SearchParamType>> = {
  _id: 'token',
  _lastUpdated: 'date',
  url: 'uri',
  status: 'token',
  version: 'token',
  identifier: 'token',
  date: 'date',
}

function declaredBySchema(querystring: unknown): SearchDeclaration | undefined {
  const properties = (querystring as { properties?: Record<string, { description?: string }> } | undefined)?.properties
  if (properties === undefined) return undefined
  const params = Object.entries(properties)
    .filter(([name]) => !(RESULT_PARAMS as readonly string[]).includes(name))
    .map(([name, schema]) => ({ name, type: USUAL_TYPES[name] ?? 'string', documentation: schema.description ?? name }))
  return { params }
}

/** The interaction a route is, by its method and URL (`GET /fhir/Location/:id` is a read), or null. */
export function interactionOf(route: {
  method: string
  url: string
  config?: { fhirSearch?: SearchDeclaration }
  schema?: { querystring?: unknown }
}): FhirRoute | null {
  const instance = INSTANCE.exec(route.url)
  const type = TYPE.exec(route.url)
  const resourceType = instance?.[1] ?? type?.[1]
  if (resourceType === undefined) return null
  const byMethod: Record<string, Interaction> = instance
    ? { GET: 'read', PUT: 'update', PATCH: 'patch', DELETE: 'delete' }
    : { GET: 'search-type', POST: 'create' }
  const interaction = byMethod[route.method]
  if (interaction === undefined) return null
  if (interaction !== 'search-type') return { resourceType, interaction }
  const search = route.config?.fhirSearch ?? declaredBySchema(route.schema?.querystring) ?? { params: [] }
  return { resourceType, interaction, search }
}

export function createFhirRegistry() {
  const routes: FhirRoute[] = []
  return {
    routes: routes as readonly FhirRoute[],
    note(route: Parameters<typeof interactionOf>[0]) {
      const found = interactionOf(route)
      if (found !== null) routes.push(found)
    },
  }
}

export type FhirRegistry = ReturnType<typeof createFhirRegistry>
