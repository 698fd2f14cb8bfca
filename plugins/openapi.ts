import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import fp from 'fastify-plugin'

/**
 * The OpenAPI document, generated from the same TypeBox schemas that validate and serialize,
 * at /openapi.json, with the interactive page at /docs. Neither needs a token.
 */
export default fp(
  async function openapiPlugin(fastify, opts: { version: string }) {
    await fastify.register(swagger, {
      openapi: {
        openapi: '3.0.3',
        info: {
          title: 'facility-service',
          description: 'Ward occupants, form templates and notifications of a hospital ward.',
          version: opts.version,
        },
        components: {
          securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'an API token' } },
        },
        security: [{ bearerAuth: [] }],
      },
      refResolver: {
        buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
      },
    })
    await fastify.register(swaggerUi, { routePrefix: '/docs', uiConfig: { deepLinking: true, validatorUrl: null } })
    fastify.get('/openapi.json', { schema: { hide: true } }, function openapiDocument() {
      return fastify.swagger()
    })
  },
  { name: 'openapi', fastify: '5.x' },
)
