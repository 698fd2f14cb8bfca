import fp from 'fastify-plugin'
import { createNotificationRepository, type NewNotification } from '../db/notifications.js'
import type { WardOccupantEvent } from './events.js'

const WARD_CODES: Record<WardOccupantEvent['type'], string> = {
  occupied: 'bed-occupied',
  discharged: 'patient-discharged',
  reopened: 'discharge-reverted',
}

/**
 * The notification a ward occupant change produces: for everyone of the occupant's facility. An
 * occupant without a facility is visible only to tokens without one, and so is its notification
 * (unboundOnly): a notification without a facility would otherwise be for every facility.
 */
export function wardNotification(event: WardOccupantEvent): NewNotification {
  const { occupant } = event
  const where = occupant.room === undefined ? `bed ${occupant.bed}` : `bed ${occupant.bed} (room ${occupant.room})`
  const text: Record<WardOccupantEvent['type'], [string, string]> = {
    occupied: [`Bed ${occupant.bed} occupied`, `Encounter ${occupant.encounter} now occupies ${where}.`],
    discharged: [
      `Patient discharged from bed ${occupant.bed}`,
      `Encounter ${occupant.encounter} was discharged from ${where}.`,
    ],
    reopened: [
      `Discharge reverted, bed ${occupant.bed}`,
      `The discharge of encounter ${occupant.encounter} from ${where} was reverted; the bed is occupied again.`,
    ],
  }
  const [title, body] = text[event.type]
  const meta: Record<string, unknown> = {
    wardOccupantId: occupant.id,
    bed: occupant.bed,
    encounter: occupant.encounter,
  }
  if (occupant.room !== undefined) meta.room = occupant.room
  return {
    createdAt: event.at,
    facility: occupant.facility ?? null,
    unboundOnly: (occupant.facility ?? null) === null,
    code: WARD_CODES[event.type],
    type: 'ward',
    title,
    body,
    meta,
  }
}

/**
 * Turns the service's own events into notifications. Listeners run synchronously inside the
 * write transaction that emitted the event, so a change and its notification commit together.
 */
export default fp(
  async function notificationProducer(fastify) {
    const notifications = createNotificationRepository(fastify.db)
    fastify.events.on('ward-occupant', function notifyWardChange(event) {
      notifications.create(wardNotification(event))
    })
  },
  { name: 'notification-producer', fastify: '5.x', dependencies: ['db', 'events'] },
)
