import { Type } from '@sinclair/typebox'
import { Timestamp } from './common.js'

/** The resources whose changes the live feed carries, and what can happen to a record. */
export const FEED_RESOURCES = ['ward-occupants', 'form-templates', 'notifications', 'bed-states'] as const
export type FeedResource = (typeof FEED_RESOURCES)[number]
export type FeedAction = 'created' | 'patched' | 'removed'

export const EventsQuery = Type.Object(
  {
    resources: Type.Optional(
      Type.String({
        pattern: '^[a-z-]+(,[a-z-]+)*$',
        description: `comma-separated resources to receive (${FEED_RESOURCES.join(', ')}); default all`,
      }),
    ),
    lastEventId: Type.Optional(
      Type.String({
        pattern: '^(0|[1-9][0-9]{0,15})$',
        description: 'resume after this event id (the Last-Event-ID header wins when both are sent)',
      }),
    ),
    ticket: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'a stream ticket, in place of the Bearer header' }),
    ),
  },
  { additionalProperties: false },
)

export const StreamTicket = Type.Object(
  {
    ticket: Type.String({ description: 'opens one GET /events?ticket=... within 30 s, once' }),
    expiresAt: Timestamp,
  },
  { additionalProperties: false },
)

export const EventStream = Type.String({
  description:
    'text/event-stream: `ready` or `reset`, then `<resource> created|patched|removed` events whose id is the ' +
    'sequence number to resume from and whose data is the record as GET /<resource>/:id shows it',
})
