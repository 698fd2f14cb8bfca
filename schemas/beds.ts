import { type Static, Type } from '@sinclair/typebox'
import { Text } from './common.js'
import { WardOccupant } from './ward-occupants.js'

export const BedsQuery = Type.Object(
  {
    facility: Type.Optional(
      Text(200, {
        description:
          'the facility whose beds to list; a token bound to a facility may only name its own (default: its own; ' +
          'for a token without a facility, default: the records without a facility)',
      }),
    ),
  },
  { additionalProperties: false },
)
export type BedsQuery = Static<typeof BedsQuery>

export const Bed = Type.Object(
  {
    bed: Type.String({ description: 'bed id, as the occupants name it' }),
    room: Type.Optional(Type.String({ description: 'the room of its current or last occupant' })),
    active: Type.Array(WardOccupant, {
      description: 'the occupants in the bed now, oldest first (empty: the bed is free)',
    }),
    lastDischarged: Type.Optional(WardOccupant),
  },
  { additionalProperties: false },
)

export const BedList = Type.Object(
  {
    facility: Type.Optional(Type.String({ description: 'the facility listed (absent: records without one)' })),
    beds: Type.Array(Bed),
    total: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
)
