import type { FhirRoute } from './registry.js'

/**
 * The CapabilityStatement (http://hl7.org/fhir/R4/capabilitystatement.html) of the routes the
 * endpoint registered: each resource type with exactly its interactions, search parameters,
 * includes and revincludes, in a stable order. Pure.
 */
export interface CapabilityOptions {
  base: string
  version: string
  /** when the server started (the statement's date) */
  date: string
}

const ORDER = ['read', 'vread', 'update', 'patch', 'delete', 'history-instance', 'create', 'search-type']

export function capabilityStatement(routes: readonly FhirRoute[], options: CapabilityOptions) {
  const types = [...new Set(routes.map((r) => r.resourceType))].sort()
  const resource = types.map((type) => {
    const own = routes.filter((r) => r.resourceType === type)
    const interactions = [...new Set(own.map((r) => r.interaction))].sort((a, b) => ORDER.indexOf(a) - ORDER.indexOf(b))
    const search = own.find((r) => r.search !== undefined)?.search
    const entry: Record<string, unknown> = {
      type,
      interaction: interactions.map((code) => ({ code })),
      versioning: 'versioned',
      readHistory: false,
      conditionalRead: 'not-match',
    }
    if (search !== undefined) {
      if ((search.include ?? []).length > 0) entry.searchInclude = [...(search.include ?? [])]
      if ((search.revinclude ?? []).length > 0) entry.searchRevInclude = [...(search.revinclude ?? [])]
      if (search.params.length > 0)
        entry.searchParam = search.params.map((p) => ({ name: p.name, type: p.type, documentation: p.documentation }))
    }
    return entry
  })
  return {
    resourceType: 'CapabilityStatement',
    status: 'active',
    date: options.date,
    publisher: 'facility-service',
    kind: 'instance',
    software: { name: 'facility-service', version: options.version },
    implementation: { description: "the ward's beds, encounters and form templates as FHIR R4", url: options.base },
    fhirVersion: '4.0.1',
    format: ['json', 'application/fhir+json'],
    rest: [
      {
        mode: 'server',
        security: {
          service: [
            {
              coding: [
                { system: 'http://terminology.hl7.org/CodeSystem/restful-security-service', code: 'SMART-on-FHIR' },
              ],
              text: "OAuth2 bearer tokens: the service's own (fs_) or the identity provider's, with SMART scopes",
            },
          ],
          description:
            'Every interaction but this statement needs a bearer token; a token bound to a facility sees only its ward.',
        },
        resource,
      },
    ],
  }
}
