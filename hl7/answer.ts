import type { Hl7Message } from '@medplum/core'
import type { FastifyBaseLogger } from 'fastify'
import type { MessageStatus } from '../db/repositories/hl7-message-row.js'
import type { Hl7MessageLog, Outcome } from '../db/repositories/hl7-messages.js'
import { FAULT_MESSAGES, faultOfError } from '../db/storage-faults.js'
import { type AdtReading, type AdtSettings, readAdt, unescapeValue } from '../domain/adt-message.js'
import { contentDigest } from '../domain/hl7-content.js'
import { type SenderRules, senderAllowed } from '../lib/hl7-network.js'
import { ackFor } from './acks.js'
import { screenDecoding } from './charset.js'
import { readingSettingsText } from './reading-settings.js'
import type { RefusalLog } from './refusals.js'

export interface AnswerOptions {
  log: Hl7MessageLog
  settings: AdtSettings
  /** MSH-3^MSH-4 pairs that may send, and from where; empty: any. */
  senders: SenderRules
  /** Counts the messages of refused senders and logs them, a line a minute per address at most. */
  refusals: RefusalLog
  logger: FastifyBaseLogger
  /** Told of every answer: the trigger event as sent (MSH-9.2), what became of it, since when it was in hand. */
  observe?: (answered: Answered) => void
}

export interface Answered {
  trigger: string
  outcome: MessageStatus | 'duplicate' | 'AE'
  receivedAt: number
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

/** MSH-3 and MSH-4 as the client wrote them (read even when the rest of the header is not). */
function claimedSender(message: Hl7Message, reading: AdtReading): { app: string; facility: string } {
  if (reading.header !== null)
    return { app: reading.header.sendingApplication, facility: reading.header.sendingFacility }
  const msh = message.getSegment('MSH')
  const escapeChar = msh?.context.escapeCharacter
  const read = (field: number) => (msh ? unescapeValue(msh.getComponent(field, 1), escapeChar).trim() : '')
  return { app: read(3), facility: read(4) }
}

/**
 * Why a sender not in HL7_ALLOWED_SENDERS (or not from its address there) is refused; null: it may
 * send. MSH-3/MSH-4 are what the client claims: a filter, not authentication.
 */
function senderRefusal(claimed: { app: string; facility: string }, senders: SenderRules, remote: string) {
  if (senders.size === 0) return null
  const pair = `${claimed.app}^${claimed.facility}`
  if (senderAllowed(senders, pair, remote)) return null
  const who = `sender ${claimed.app || '(empty)'} of ${claimed.facility || '(empty)'} (MSH-3, MSH-4)`
  return senders.has(pair)
    ? `${who} may not send from ${remote || 'this address'} (HL7_ALLOWED_SENDERS)`
    : `${who} is not in HL7_ALLOWED_SENDERS`
}

/** What a refused sender claimed, cut short for the log line (MSH-3 may be as long as the frame). */
const forLog = (text: string) => (text.length > 64 ? `${text.slice(0, 64)}...` : text)

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
      const reading = readAdt(message, opts.settings)
      // Before the log is asked anything: a stranger's message reserves no control id, is stored
      // nowhere and learns nothing of the ids another sender used. It is counted and logged only.
      const claimed = claimedSender(message, reading)
      const refused = senderRefusal(claimed, opts.senders, remote)
      if (refused !== null) {
        opts.refusals.note('sender', remote, `claimed MSH-3^MSH-4 ${forLog(claimed.app)}^${forLog(claimed.facility)}`)
        opts.observe?.({ trigger: reading.header?.trigger ?? '', outcome: 'rejected', receivedAt })
        return ackFor(message, 'AR', refused, { field: 'MSH-3', code: 207, text: refused })
      }
      const text = message.toString()
      const screened = screenDecoding(reading, text)
      const lost = screened.kind === 'rejected' && screened.rejection.field === 'MSH-18'
      const { row, duplicate } = await opts.log.receive({
        reading: screened,
        // Text lost in decoding is not kept.
        raw: lost ? null : text,
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
      opts.observe?.({ trigger: row.event ?? '', outcome: duplicate ? 'duplicate' : row.status, receivedAt })
      return row.ack
    } catch (error) {
      const fault = faultOfError(error)
      const text = fault === null ? 'the message could not be processed now; send it again' : FAULT_MESSAGES[fault]
      if (fault === null) opts.logger.error({ err: error }, 'HL7: a message failed; answered AE')
      opts.observe?.({ trigger: '', outcome: 'AE', receivedAt })
      return ackFor(message, 'AE', text, { field: '', code: fault === 'busy' ? 206 : 207, text })
    }
  }
}
