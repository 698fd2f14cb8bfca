import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Static } from '@sinclair/typebox'
import type { Hl7MessageRow } from '../../db/repositories/hl7-messages.js'
import { Hl7StillParkedError, NotFoundError } from '../../domain/errors.js'
import type { Principal } from '../../domain/principal.js'
import { noteListTotal } from '../../plugins/read-audit.js'
import { errorResponses } from '../../schemas/common.js'
import { Hl7MessageList, Hl7MessageQuery, Hl7MessageRecord, IdParams } from '../../schemas/hl7-messages.js'

type Record = Static<typeof Hl7MessageRecord>

function toRecord(row: Hl7MessageRow, withText: boolean): Record {
  const record: Record = {
    id: row.id,
    sendingApplication: row.sending_application,
    sendingFacility: row.sending_facility,
    receivedAt: row.received_at,
    status: row.status,
    ackCode: row.ack_code,
  }
  const optional: [keyof Record, unknown][] = [
    ['controlId', row.control_id],
    ['controlIdUsedBy', row.control_id_used_by],
    ['messageType', row.message_type],
    ['event', row.event],
    ['facility', row.facility],
    ['encounter', row.encounter],
    ['eventAt', row.event_at],
    ['errorField', row.error_field],
    ['error', row.error],
    ['parkCode', row.park_code],
    ['resolvedAt', row.resolved_at],
    ['resolvedBy', row.resolved_by],
    ['text', withText ? row.raw : null],
  ]
  for (const [key, value] of optional) if (value !== null) Object.assign(record, { [key]: value })
  return record
}

/**
 * The ADT feed's message log for administrators: parked messages to resolve (retry or dismiss),
 * and what became of any message. A facility-bound admin sees its own facility's messages only;
 * another facility's is a 404, as for every record.
 */
const hl7MessageRoutes: FastifyPluginAsyncTypebox = async function hl7MessageRoutes(fastify) {
  const { messages } = fastify.hl7

  function visible(principal: Principal, id: string): Hl7MessageRow {
    const row = messages.get(id)
    if (!row || (principal.facility !== null && row.facility !== principal.facility))
      throw new NotFoundError('HL7 message', id)
    return row
  }

  fastify.get(
    '/hl7/messages',
    {
      config: { role: 'admin', readAudit: 'list' },
      schema: {
        tags: ['administration'],
        summary: 'list ADT messages, newest first (status=parked: those waiting for an admin)',
        querystring: Hl7MessageQuery,
        response: { 200: Hl7MessageList, ...errorResponses() },
      },
    },
    async function listMessages(request) {
      const limit = Math.min(Number(request.query.$limit ?? 100), 1000)
      const skip = Number(request.query.$skip ?? 0)
      const page = messages.list(request.principal.facility, request.query.status ?? null, limit, skip)
      noteListTotal(request, page.total)
      return { hl7Messages: page.rows.map((row) => toRecord(row, false)), total: page.total, limit, skip }
    },
  )

  fastify.get(
    '/hl7/messages/:id',
    {
      config: { role: 'admin', readAudit: 'get' },
      schema: {
        tags: ['administration'],
        summary: 'one ADT message, with its text while it is kept',
        params: IdParams,
        response: { 200: Hl7MessageRecord, ...errorResponses(404) },
      },
    },
    async function getMessage(request) {
      return toRecord(visible(request.principal, request.params.id), true)
    },
  )

  fastify.post(
    '/hl7/messages/:id/retry',
    {
      // Safe to repeat without a stored answer: a message no longer parked is 409 HL7_NOT_PARKED.
      config: { role: 'admin', idempotency: 'accept', readAudit: 'write' },
      schema: {
        tags: ['administration'],
        summary: 'apply a parked ADT message again; 409 HL7_STILL_PARKED with the reason when it still does not fit',
        params: IdParams,
        response: { 200: Hl7MessageRecord, ...errorResponses(404, 409) },
      },
    },
    async function retryMessage(request) {
      visible(request.principal, request.params.id)
      const row = await fastify.hl7.retry(request.params.id, request.principal.account)
      if (row.status === 'parked') throw new Hl7StillParkedError(row.error ?? '')
      return toRecord(row, false)
    },
  )

  fastify.post(
    '/hl7/messages/:id/dismiss',
    {
      // Safe to repeat without a stored answer: a message no longer parked is 409 HL7_NOT_PARKED.
      config: { role: 'admin', idempotency: 'accept', readAudit: 'write' },
      schema: {
        tags: ['administration'],
        summary: 'dismiss a parked ADT message: it stays in the log, resolved, and is never applied',
        params: IdParams,
        response: { 200: Hl7MessageRecord, ...errorResponses(404, 409) },
      },
    },
    async function dismissMessage(request) {
      visible(request.principal, request.params.id)
      return toRecord(await messages.dismiss(request.params.id, request.principal.account), false)
    },
  )
}

export default hl7MessageRoutes
