import { Type } from '@sinclair/typebox'
import { Id, IdParams, ListEnvelope, StringEnum, Timestamp } from './common.js'

export const HL7_MESSAGE_STATUSES = ['applied', 'ignored', 'parked', 'rejected', 'dismissed'] as const

/** One message of the ADT feed's log, as an admin reads it (docs/ADT.md). */
export const Hl7MessageRecord = Type.Object({
  id: Id,
  sendingApplication: Type.String({ description: 'MSH-3' }),
  sendingFacility: Type.String({ description: 'MSH-4' }),
  controlId: Type.Optional(Type.String({ description: 'MSH-10' })),
  controlIdUsedBy: Type.Optional(
    Type.String({
      pattern: Id.pattern,
      description:
        'refused (AR on MSH-10): the id of the logged message that already had this control id from this sender, with other content',
    }),
  ),
  messageType: Type.Optional(Type.String({ description: 'MSH-9.1, e.g. ADT' })),
  event: Type.Optional(Type.String({ description: 'MSH-9.2, e.g. A01' })),
  facility: Type.Optional(Type.String({ description: 'the ward facility the message concerns' })),
  encounter: Type.Optional(Type.String({ description: 'PV1-19' })),
  receivedAt: Timestamp,
  eventAt: Type.Optional(Timestamp),
  status: StringEnum(HL7_MESSAGE_STATUSES),
  ackCode: StringEnum(['AA', 'AR'] as const, { description: 'MSA-1 of the ACK the sender got' }),
  errorField: Type.Optional(Type.String({ description: 'the field an AR named, e.g. PV1-3' })),
  error: Type.Optional(Type.String({ description: 'why it was rejected or parked' })),
  parkCode: Type.Optional(Type.String({ description: 'out-of-order, bed-occupied, not-admitted ...' })),
  resolvedAt: Type.Optional(Timestamp),
  resolvedBy: Type.Optional(Type.String()),
  text: Type.Optional(
    Type.String({ description: 'the message as received (patient data; GET of one message only, kept HL7_KEEP_DAYS)' }),
  ),
})

export const Hl7MessageList = ListEnvelope('hl7Messages', Hl7MessageRecord)

export const Hl7MessageQuery = Type.Object(
  {
    status: Type.Optional(StringEnum(HL7_MESSAGE_STATUSES)),
    $limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,6}$', description: 'at most 1000, default 100' })),
    $skip: Type.Optional(Type.String({ pattern: '^[0-9]{1,9}$' })),
  },
  { additionalProperties: false },
)

export { IdParams }
