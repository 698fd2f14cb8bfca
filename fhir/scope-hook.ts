import createError from '@fastify/error'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { type FhirInteraction, refusalText, scopeDecision } from './scopes.js'

// Until the FHIR error (fhir/outcome.ts) is here: a 403 the /fhir error handler turns into a
// forbidden OperationOutcome with this message as its diagnostics.
const ScopeMissingError = createError('SCOPE_MISSING', '%s', 403)

/**
 * A preHandler for a FHIR route: the token's SMART scopes must grant `interaction` on
 * `resourceType` (fhir/scopes.ts), on top of the role the auth plugin already checked. A service
 * token has no scopes and passes; a provider token without the scope gets a 403 naming it, and
 * `WWW-Authenticate: Bearer error="insufficient_scope"` (RFC 6750 §3.1) with the scope.
 */
export function requireScope(resourceType: string, interaction: FhirInteraction) {
  return async function checkScope(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const scopes = request.principal?.scopes
    const decision = scopeDecision(scopes, resourceType, interaction)
    if (decision.allowed) return
    reply.header('www-authenticate', `Bearer error="insufficient_scope", scope="${decision.needed}"`)
    throw new ScopeMissingError(refusalText(scopes ?? [], resourceType, interaction, decision.needed))
  }
}
