import type { AdtReading } from '../../domain/adt-message.js'
import type { ParkCode } from '../../domain/adt-ward.js'

/** A row of the ADT message log (hl7_messages, schema.sql migrations 13 and 15) and what makes one. */
export const MESSAGE_STATUSES = ['applied', 'ignored', 'parked', 'rejected', 'dismissed'] as const
export type MessageStatus = (typeof MESSAGE_STATUSES)[number]

/** What became of a message, from which its ACK is built. */
export interface Outcome {
  status: MessageStatus
  ackCode: 'AA' | 'AR'
  errorField: string | null
  error: string | null
  /** HL7 table 0357 code of a rejection, for the ACK's ERR segment. */
  errorCode: number | null
  parkCode: ParkCode | null
}

export interface Hl7MessageRow {
  id: string
  sending_application: string
  sending_facility: string
  control_id: string | null
  message_type: string | null
  event: string | null
  facility: string | null
  encounter: string | null
  received_at: number
  event_at: number | null
  status: MessageStatus
  ack_code: 'AA' | 'AR'
  ack: string
  error_field: string | null
  error: string | null
  park_code: string | null
  raw: string | null
  resolved_at: number | null
  resolved_by: string | null
  /** contentDigest of the text (domain/hl7-content.ts); null: logged before migration 15. */
  digest: string | null
  /** A message refused for reusing a control id: the id of the row that holds it. */
  control_id_used_by: string | null
  /** A parked message: the reading settings at receipt (JSON), for its retry. */
  read_with: string | null
  /** When its patient data went (HL7_KEEP_DAYS): text, encounter, reason, the ACK's details. */
  pruned_at: number | null
}

export interface Received {
  reading: AdtReading
  raw: string | null
  /** contentDigest of the message's text: a resend is the same sender, control id and content. */
  digest: string
  /** The settings the text was read with, kept with a parked message so a retry reads it alike. */
  readWith: string
  receivedAt: number
  /** The ACK text for an outcome (built by the listener; stored, so a resend gets the same). */
  answer(outcome: Outcome): string
}
