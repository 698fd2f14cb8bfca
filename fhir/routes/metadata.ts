import type { FastifyInstance } from 'fastify'
import { productVersion } from '../../lib/product-files.js'
import { capabilityStatement } from '../capability.js'
import type { FhirRegistry } from '../registry.js'
import { baseUrl } from '../reply.js'

/** GET /fhir/metadata: the CapabilityStatement, without a token (http://hl7.org/fhir/R4/http.html#capabilities). */
export default async function metadataRoutes(fastify: FastifyInstance, opts: { registry: FhirRegistry }) {
  const date = new Date().toISOString()
  const version = productVersion()
  fastify.get('/metadata', { schema: { hide: true } }, async function capabilities(request, reply) {
    const statement = capabilityStatement(opts.registry.routes, { base: baseUrl(request), version, date })
    return reply.send(JSON.stringify(statement))
  })
}
