import type { Hl7Message } from '@medplum/core'
import type { FastifyBaseLogger } from 'fastify'
import type { Hl7MessageLog, Outcome } from '../db/repositories/hl7-messages.js'
import { FAULT_MESSAGES, faultOfError } from '../db/storage-faults.js'
import { type AdtReading, type AdtSettings, readAdt } from '../domain/adt-message.js'
import { contentDigest } from '../domain/hl7-content.js'
import { type SenderRules, senderAllowed } from '../lib/hl7-network.js'
import { ackFor } from './acks.js'
import { screenDecoding } from './charset.js'
import { readingSettingsText } from './reading-settings.js'

export interface AnswerOptions {
  log: Hl7MessageLog
  settings: AdtSettings
  /** MSH-3^MSH-4 pairs that may send, and from where; empty: any. */
  senders: SenderRules
  logger: FastifyBaseLogger
}

/** The ACK text of what became of a message. */
function ackOf(message: Hl7Message, outcome: Outcome): string {
  switch (outcome.status) {
    case 'rejected':
      return ackFor(message, 'AR', outcome.error ?? 'rejected', {
        field: outcome.errorField ?? '',
        code: outcome.errorCode ?? 207,
        text: outcome.error ?? 'rejected',
      })
    case 'parked':
      return ackFor(message, 'AA', `parked: ${outcome.error}`)
    case 'ignored':
      return ackFor(message, 'AA', 'ignored: the ward does not use this event')
    default:
      return ackFor(message, 'AA', 'applied')
  }
}

/**
 * A sender not in HL7_ALLOWED_SENDERS (or not from its address there): the message becomes a
 * rejection of MSH-3. MSH-3/MSH-4 are what the client claims: a filter, not authentication.
 */
function screenSender(reading: AdtReading, senders: SenderRules, remote: string): AdtReading {
  const header = reading.header
  if (senders.size === 0 || header === null) return reading
  const { sendingApplication: app, sendingFacility: facility } = header
  const pair = `${app}^${facility}`
  if (senderAllowed(senders, pair, remote)) return reading
  const who = `sender ${app || '(empty)'} of ${facility || '(empty)'} (MSH-3, MSH-4)`
  const reason = senders.has(pair)
    ? `${who} may not send from ${remote || 'this address'} (HL7_ALLOWED_SENDERS)`
    : `${who} is not in HL7_ALLOWED_SENDERS`
  return { kind: 'rejected', header, rejection: { field: 'MSH-3', reason, code: 207 } }
}

/**
 * Answers one message: AA or AR once its outcome is committed and durable (a resend gets the
 * stored ACK), AE when the database could not take it now (busy, full disk: the sender retries).
 * The raw text and the fields are patient data: the log gets ids and outcomes only.
 */
export function createAnswerer(opts: AnswerOptions) {
  const readWith = readingSettingsText(opts.settings)
  return async function answer(message: Hl7Message, remote = ''): Promise<string> {
    const receivedAt = Date.now()
    try {
      const text = message.toString()
      const reading = screenDecoding(screenSender(readAdt(message, opts.settings), opts.senders, remote), text)
      const notKept = reading.kind === 'rejected' && ['MSH-3', 'MSH-18'].includes(reading.rejection.field)
      const { row, duplicate } = await opts.log.receive({
        reading,
        // A stranger's message is not kept: only that it came; nor is text lost in decoding.
        raw: notKept ? null : text,
        digest: contentDigest(text),
        readWith,
        receivedAt,
        answer: (outcome) => ackOf(message, outcome),
      })
      // A reused control id is likely a sender's counter reset: its messages are refused until fixed.
      const reused = row.control_id_used_by !== null && !duplicate
      const level = reused ? 'warn' : row.status === 'parked' || row.status === 'rejected' ? 'info' : 'debug'
      opts.logger[level](
        {
          hl7: { sender: row.sending_application, controlId: row.control_id, event: row.event },
          status: row.status,
          parkCode: row.park_code ?? undefined,
          errorField: row.error_field ?? undefined,
          controlIdUsedBy: row.control_id_used_by ?? undefined,
          duplicate,
        },
        duplicate
          ? 'HL7 resend: the stored ACK was sent again'
          : reused
            ? 'HL7 control id already used by this sender for a different message: AR'
            : `HL7 message ${row.status}`,
      )
      return row.ack
    } catch (error) {
      const fault = faultOfError(error)
      const text = fault === null ? 'the message could not be processed now; send it again' : FAULT_MESSAGES[fault]
      if (fault === null) opts.logger.error({ err: error }, 'HL7: a message failed; answered AE')
      return ackFor(message, 'AE', text, { field: '', code: fault === 'busy' ? 206 : 207, text })
    }
  }
}
