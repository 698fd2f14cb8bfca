/**
 * The ward's own events and the notifications they produce. Rules and texts only, no I/O: the
 * repository emits the events inside the write transaction, plugins/notification-producer.ts
 * stores the notification each one produces.
 */
import type { EventEmitter } from 'node:events'
import type { Direction } from '../schemas/notifications.js'
import type { Principal } from './principal.js'

export interface WardOccupantEvent {
  type: 'occupied' | 'discharged' | 'reopened'
  occupant: { id: string; facility?: string; bed: string; room?: string; encounter: string; occupiedBy: string }
  actor: Principal
  at: number
}

export interface ServiceEvents {
  'ward-occupant': [WardOccupantEvent]
}

/** Emitted inside the write transaction; listeners run synchronously, in that transaction. */
export type ServiceEventBus = EventEmitter<ServiceEvents>

/** A notification to be stored (by the service itself, the CLI, or a script). */
export interface NewNotification {
  createdAt?: number
  facility: string | null
  code: string
  type: string
  title: string
  body: string
  meta?: Record<string, unknown>
  direction?: Direction
  /** The addressed accounts; absent or empty means everyone of the facility. */
  to?: string[]
  /**
   * Only for callers without a facility (facility must be null): the notification of a record
   * that has no facility, which facility-bound tokens may not see either. Without it, a
   * notification without a facility is for every facility.
   */
  unboundOnly?: boolean
}

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
