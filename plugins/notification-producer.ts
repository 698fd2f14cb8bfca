import fp from 'fastify-plugin'
import { wardNotification } from '../domain/ward-events.js'

/**
 * Turns the service's own events into notifications. Listeners run synchronously inside the
 * write transaction that emitted the event, so a change and its notification commit together.
 */
export default fp(
  async function notificationProducer(fastify) {
    const notifications = fastify.repos.notifications
    fastify.events.on('ward-occupant', function notifyWardChange(event) {
      notifications.create(wardNotification(event))
    })
  },
  { name: 'notification-producer', fastify: '5.x', dependencies: ['db', 'events'] },
)
