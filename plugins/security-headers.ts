import helmet from '@fastify/helmet'
import fp from 'fastify-plugin'

/**
 * Security headers on every answer. The content security policy allows only this origin's own
 * scripts and styles (plus the inline styles and data: images the API docs page uses), so the
 * interactive docs work and nothing else may run in a browser that opens a response.
 */
export default fp(
  async function securityHeaders(fastify) {
    await fastify.register(helmet, {
      global: true,
      contentSecurityPolicy: {
        directives: {
          defaultSrc: ["'self'"],
          scriptSrc: ["'self'"],
          styleSrc: ["'self'", "'unsafe-inline'"],
          imgSrc: ["'self'", 'data:'],
          connectSrc: ["'self'"],
          objectSrc: ["'none'"],
          frameAncestors: ["'none'"],
          formAction: ["'self'"],
          baseUri: ["'self'"],
        },
      },
      // The API is not meant to be embedded or opened cross-origin.
      crossOriginResourcePolicy: { policy: 'same-origin' },
    })
  },
  { name: 'security-headers', fastify: '5.x' },
)
