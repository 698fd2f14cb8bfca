import type { FastifyInstance } from 'fastify'
import { Counter, Gauge, Histogram, type Registry } from 'prom-client'
import type { Answered } from '../hl7/answer.js'

/**
 * The ADT trigger events HL7 v2 defines (A01 to A62): the only values the event label takes, so
 * whatever a sender writes in MSH-9.2 cannot grow the label set. Anything else is "other".
 */
export const ADT_TRIGGERS: ReadonlySet<string> = new Set(
  Array.from({ length: 62 }, (_, i) => `A${String(i + 1).padStart(2, '0')}`),
)

export function eventLabel(trigger: string): string {
  return ADT_TRIGGERS.has(trigger) ? trigger : 'other'
}

/** What became of a message; a closed set like the events. */
export const ADT_OUTCOMES = ['applied', 'parked', 'ignored', 'rejected', 'dismissed', 'duplicate', 'AE'] as const

/** ADT messages by event and outcome, the time until their ACK, those parked now, and the listener's connections. */
export function instrumentAdt(fastify: FastifyInstance, registry: Registry): void {
  const registers = [registry]
  const messages = new Counter({
    name: 'facility_service_adt_messages_total',
    help: 'ADT messages answered, by trigger event (A01 ...; other) and outcome (applied, parked, ignored, rejected: AR, AE: try again, duplicate: a resend answered with its stored ACK)',
    labelNames: ['event', 'outcome'],
    registers,
  })
  const ackSeconds = new Histogram({
    name: 'facility_service_adt_ack_duration_seconds',
    help: 'time from a message received to its ACK ready to send (its change durable)',
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  })
  fastify.hl7.onAnswered(function observeAnswer(answered: Answered) {
    messages.labels(eventLabel(answered.trigger), answered.outcome).inc()
    ackSeconds.observe(Math.max(0, Date.now() - answered.receivedAt) / 1000)
  })
  new Gauge({
    name: 'facility_service_adt_messages_parked',
    help: 'ADT messages parked now, waiting for an admin to retry or dismiss them',
    registers,
    collect() {
      this.set(fastify.hl7.messages.parkedCount())
    },
  })
  new Gauge({
    name: 'facility_service_adt_connections_open',
    help: 'MLLP connections open now (0 without the listener)',
    registers,
    collect() {
      this.set(fastify.hl7.connections()?.open ?? 0)
    },
  })
  new Gauge({
    name: 'facility_service_adt_listener_up',
    help: '1 while the ADT listener listens (HL7_PORT set), else 0',
    registers,
    collect() {
      this.set(fastify.hl7.port === null ? 0 : 1)
    },
  })
  new Counter({
    name: 'facility_service_adt_connections_refused_total',
    help: 'MLLP connections closed unread (full, address, handshake) and messages of senders not allowed (sender)',
    labelNames: ['reason'],
    registers,
    collect() {
      const counts = fastify.hl7.connections()?.refused
      if (counts === undefined) return
      this.reset()
      for (const [reason, count] of Object.entries(counts)) this.labels(reason).inc(count)
    },
  })
}
