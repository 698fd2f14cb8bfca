import { type Static, Type } from '@sinclair/typebox'
import { Id, Text, Timestamp } from './common.js'

export const WardOccupant = Type.Object(
  {
    id: Id,
    createdAt: Timestamp,
    createdBy: Type.String({ description: 'account uid of the creator' }),
    facility: Type.Optional(Type.String()),
    encounter: Type.String({ description: 'identifier of the encounter' }),
    room: Type.Optional(Type.String()),
    bed: Type.String({ description: 'bed id' }),
    provider: Type.Optional(Type.String({ description: 'doc uid' })),
    occupiedAt: Timestamp,
    occupiedBy: Type.String({ description: 'account uid of the patient' }),
    dischargedAt: Type.Optional(Timestamp),
    dischargedBy: Type.Optional(Type.String({ description: 'account uid' })),
  },
  { additionalProperties: false },
)
export type WardOccupant = Static<typeof WardOccupant>

export const WardOccupantCreate = Type.Object(
  {
    encounter: Text(200, { description: 'identifier of the encounter' }),
    bed: Text(200, { description: 'bed id' }),
    occupiedBy: Text(200, { description: 'account uid of the patient' }),
    createdAt: Type.Optional(Timestamp),
    occupiedAt: Type.Optional(Timestamp),
    provider: Type.Optional(Text(200, { description: 'doc uid' })),
    facility: Type.Optional(Text(200, { description: 'only for tokens not bound to a facility' })),
    room: Type.Optional(Text(200)),
  },
  { additionalProperties: false },
)
export type WardOccupantCreate = Static<typeof WardOccupantCreate>

export const WardOccupantPatch = Type.Object(
  {
    provider: Type.Optional(Text(200, { description: 'doc uid' })),
    discharge: Type.Optional(
      Type.Boolean({ description: 'true discharges an active occupant; false re-opens a discharged one' }),
    ),
  },
  { additionalProperties: false },
)
export type WardOccupantPatch = Static<typeof WardOccupantPatch>
