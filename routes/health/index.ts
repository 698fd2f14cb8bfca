import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { ErrorBody } from '../../plugins/schemas.js'

const Health = Type.Object({ status: Type.Literal('ok'), database: Type.Literal('ok') })
const Unhealthy = Type.Object({ status: Type.Literal('unavailable'), database: Type.String() })

/** Liveness and database check, without a token, for load balancers and service managers. */
const healthRoutes: FastifyPluginAsyncTypebox = async function healthRoutes(fastify) {
  fastify.get(
    '/health',
    {
      schema: {
        tags: ['health'],
        summary: 'liveness and database check (no token needed)',
        security: [],
        // A refused query string is the one client error it can answer.
        response: { 200: Health, 400: Type.Ref(ErrorBody), 503: Unhealthy },
      },
    },
    async function health(request, reply) {
      try {
        fastify.db.prepare('SELECT 1').get()
        return { status: 'ok' as const, database: 'ok' as const }
      } catch (error) {
        request.log.error({ err: error }, 'health check failed')
        return reply.code(503).send({ status: 'unavailable' as const, database: 'unreachable' })
      }
    },
  )
}

export default healthRoutes
