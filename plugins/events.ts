import { EventEmitter } from 'node:events'
import fp from 'fastify-plugin'
import type { ServiceEventBus, ServiceEvents } from '../domain/ward-events.js'

declare module 'fastify' {
  interface FastifyInstance {
    events: ServiceEventBus
  }
}

/**
 * In-process domain events. They are emitted inside the write transaction and listeners run
 * synchronously, so whatever a listener writes (a notification, say) commits or rolls back
 * together with the change that caused it.
 */
export default fp(
  async function eventsPlugin(fastify) {
    fastify.decorate('events', new EventEmitter<ServiceEvents>())
  },
  { name: 'events', fastify: '5.x' },
)
