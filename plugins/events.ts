import { EventEmitter } from 'node:events'
import fp from 'fastify-plugin'
import type { Principal } from '../db/tokens.js'

export interface WardOccupantEvent {
  type: 'occupied' | 'discharged' | 'reopened'
  occupant: { id: string; facility?: string; bed: string; room?: string; encounter: string; occupiedBy: string }
  actor: Principal
  at: number
}

export interface ServiceEvents {
  'ward-occupant': [WardOccupantEvent]
}

export type ServiceEventBus = EventEmitter<ServiceEvents>

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
