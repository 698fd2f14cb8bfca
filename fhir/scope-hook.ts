import type { FastifyReply, FastifyRequest } from 'fastify'

/**
 * A STAND-IN until the SMART scopes are merged: it allows every interaction (a token's role and
 * facility still apply). The real one checks the provider token's SMART scopes and answers 403
 * naming the scope missing; it keeps this signature.
 */
export type FhirInteraction = 'read' | 'search' | 'create' | 'update' | 'delete'

export function requireScope(_resourceType: string, _interaction: FhirInteraction) {
  return function scopeAllowed(_request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) {
    done()
  }
}
