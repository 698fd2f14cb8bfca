import { type Static, Type } from '@sinclair/typebox'
import { Id, ListQueryString, StringEnum, Timestamp } from './common.js'

export const DIRECTIONS = ['inbound', 'outbound'] as const
export type Direction = (typeof DIRECTIONS)[number]

export const Notification = Type.Object(
  {
    id: Id,
    createdAt: Timestamp,
    code: Type.String({ description: 'kind of notification, e.g. bed-occupied, new-queue-item' }),
    type: Type.String({ description: 'category, e.g. ward, warehouse' }),
    title: Type.String(),
    body: Type.String(),
    meta: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'for apps, by type' })),
    seenBy: Type.Array(Type.String(), {
      description:
        'account uids of those who have marked it seen; a caller bound to a facility sees only the ' +
        'readers who marked it with a token of that facility (and itself), see docs/notifications.md',
    }),
    direction: Type.Optional(StringEnum(DIRECTIONS)),
    facility: Type.Optional(
      Type.String({
        description:
          'extension: the facility it belongs to; absent means every facility (or, for the notification ' +
          'of a record without a facility, only callers without a facility)',
      }),
    ),
    to: Type.Optional(
      Type.Array(Type.String(), {
        description: 'extension, shown to admin tokens only: the addressed accounts; absent means everyone',
      }),
    ),
  },
  { additionalProperties: false },
)
export type Notification = Static<typeof Notification>

export const NotificationListQuery = Type.Object(
  {
    ...ListQueryString.properties,
    $unseen: Type.Optional(
      StringEnum(['true', 'false'], { description: 'true: only what the caller has not seen; false: only seen' }),
    ),
  },
  {
    additionalProperties: true,
    description:
      'Feathers-style filters on id, createdAt, code, type, title, body, direction, facility, seenBy ' +
      '(and to, for admins), plus $unseen=true; see docs/notifications.md',
  },
)
export type NotificationListQuery = Static<typeof NotificationListQuery>

export const UnseenCount = Type.Object(
  { count: Type.Integer({ minimum: 0, description: 'notifications the caller can see and has not marked seen' }) },
  { additionalProperties: false },
)
