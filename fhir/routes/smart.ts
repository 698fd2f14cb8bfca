import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { FhirError } from '../outcome.js'
import { smartConfiguration } from '../smart-configuration.js'

const Strings = Type.Array(Type.String())
const SmartConfigurationSchema = Type.Object({
  issuer: Type.String(),
  jwks_uri: Type.String(),
  authorization_endpoint: Type.String(),
  token_endpoint: Type.String(),
  token_endpoint_auth_methods_supported: Type.Optional(Strings),
  revocation_endpoint: Type.Optional(Type.String()),
  introspection_endpoint: Type.Optional(Type.String()),
  grant_types_supported: Strings,
  scopes_supported: Strings,
  response_types_supported: Strings,
  code_challenge_methods_supported: Strings,
  capabilities: Strings,
})

/**
 * `GET /fhir/.well-known/smart-configuration`, anonymous (SMART App Launch 2.x): where a SMART app
 * signs in (the identity provider's endpoints) and what this server honours.
 */
export default async function smartRoutes(fastify: FastifyInstance) {
  // Not a FHIR resource: JSON as the SMART specification says (errors stay OperationOutcomes).
  fastify.addHook('onSend', function plainJson(_request, reply, payload, done) {
    if (reply.statusCode === 200) reply.type('application/json; charset=utf-8')
    done(null, payload)
  })
  fastify.get(
    '/.well-known/smart-configuration',
    {
      // Outside the OpenAPI document, like every /fhir route (docs/FHIR.md describes them).
      schema: { hide: true, response: { 200: SmartConfigurationSchema } },
    },
    async function getSmartConfiguration(_request, reply) {
      const provider = fastify.providerTokens
      if (provider === null)
        throw new FhirError(
          404,
          'not-found',
          'SMART on FHIR is not configured on this server: it has no identity provider (OIDC_ISSUER); use a service token',
        )
      let discovery: Record<string, unknown>
      try {
        discovery = await provider.discovery()
      } catch (error) {
        reply.header('retry-after', '30')
        throw new FhirError(
          503,
          'transient',
          `the identity provider's discovery document could not be read: ${(error as Error).message}`,
        )
      }
      const configuration = smartConfiguration(discovery)
      if (configuration === null)
        throw new FhirError(
          503,
          'transient',
          "the identity provider's discovery document names no authorization and token endpoint: SMART apps cannot sign in with it",
        )
      return configuration
    },
  )
}
