import type { FastifyReply, FastifyRequest } from 'fastify'
import { FhirError } from './outcome.js'
import { type FhirInteraction, refusalText, scopeDecision } from './scopes.js'

export type { FhirInteraction }

/**
 * A preHandler for a FHIR route: the token's SMART scopes must grant `interaction` on
 * `resourceType` (fhir/scopes.ts), on top of the role the auth plugin already checked. A service
 * token has no scopes and passes; a provider token without the scope gets a 403 OperationOutcome
 * naming it, and `WWW-Authenticate: Bearer error="insufficient_scope"` (RFC 6750 §3.1).
 */
export function requireScope(resourceType: string, interaction: FhirInteraction) {
  return async function checkScope(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const scopes = request.principal?.scopes
    const decision = scopeDecision(scopes, resourceType, interaction)
    if (decision.allowed) return
    reply.header('www-authenticate', `Bearer error="insufficient_scope", scope="${decision.needed}"`)
    throw new FhirError(403, 'forbidden', refusalText(scopes ?? [], resourceType, interaction, decision.needed))
  }
}
