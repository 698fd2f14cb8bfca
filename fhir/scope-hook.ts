import type { FastifyReply, FastifyRequest } from 'fastify'
import { FhirError } from './outcome.js'
import { type FhirInteraction, includedTypes, refusalText, scopeDecision } from './scopes.js'

export type { FhirInteraction }

/**
 * A preHandler for a FHIR route: the token's SMART scopes must grant `interaction` on
 * `resourceType` (fhir/scopes.ts), on top of the role the auth plugin already checked. A service
 * token has no scopes and passes; a provider token without the scope gets a 403 OperationOutcome
 * naming it, and `WWW-Authenticate: Bearer error="insufficient_scope"` (RFC 6750 §3.1). A search
 * also needs read access to each type its `_include` and `_revinclude` add.
 */
export function requireScope(resourceType: string, interaction: FhirInteraction) {
  return async function checkScope(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const scopes = request.principal?.scopes
    if (scopes === undefined) return
    const asked: [string, FhirInteraction][] = [[resourceType, interaction]]
    // What a search includes is read too (Location?_revinclude=Encounter:location reads Encounters).
    if (interaction === 'search')
      for (const type of includedTypes(request.query as Record<string, unknown>)) asked.push([type, 'read'])
    for (const [type, wanted] of asked) {
      const decision = scopeDecision(scopes, type, wanted)
      if (decision.allowed) continue
      reply.header('www-authenticate', `Bearer error="insufficient_scope", scope="${decision.needed}"`)
      throw new FhirError(403, 'forbidden', refusalText(scopes, type, wanted, decision.needed))
    }
  }
}
