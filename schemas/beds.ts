import { type Static, Type } from '@sinclair/typebox'
import { StringEnum, Text, Timestamp } from './common.js'
import { WardOccupant } from './ward-occupants.js'

/** Set by staff (PUT /beds/:bed/state) or an ADT A20; they outlast occupants until cleared. */
export const HOUSEKEEPING_STATES = ['cleaning', 'closed', 'contaminated', 'isolated'] as const
export type HousekeepingState = (typeof HOUSEKEEPING_STATES)[number]

/** Every state a bed can show (docs/BOARD.md). */
export const BED_STATES = ['free', 'occupied', 'on-leave', 'expected', ...HOUSEKEEPING_STATES] as const
export type BedStateWord = (typeof BED_STATES)[number]

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

export const HousekeepingWord = StringEnum(HOUSEKEEPING_STATES, {
  description: 'a housekeeping state (HL7 table 0116: C, H, K, I)',
})

export const Housekeeping = Type.Object(
  {
    state: HousekeepingWord,
    since: Timestamp,
    setBy: Type.String({ description: 'the account that set it (hl7:<sender> for an ADT A20)' }),
    note: Type.Optional(Type.String()),
  },
  { additionalProperties: false, description: 'the housekeeping state set on the bed, until cleared' },
)

export const Expected = Type.Object(
  {
    encounter: Type.String({ description: 'the encounter expected in the bed' }),
    kind: StringEnum(['admission', 'transfer'] as const, {
      description: 'a pending admission (A14) or transfer (A15)',
    }),
    since: Timestamp,
    until: Type.Optional(
      Type.Integer({ description: 'when it is no longer shown: since + BED_EXPECTED_HOURS (absent: 0, no limit)' }),
    ),
  },
  {
    additionalProperties: false,
    description: 'a pending admission or transfer naming the bed (until BED_EXPECTED_HOURS)',
  },
)

export const StayMark = Type.Object(
  { wardOccupantId: Type.String(), since: Timestamp },
  { additionalProperties: false },
)

/** What a bed's state adds to the bed: on GET /beds, and the record of a bed-states feed event. */
const stateFields = {
  state: StringEnum(BED_STATES, {
    description:
      'the state the bed shows: occupied or on leave when a patient holds it, else its housekeeping state, else expected, else free',
  }),
  housekeeping: Type.Optional(Housekeeping),
  expected: Type.Optional(Expected),
  onLeave: Type.Optional(
    Type.Array(StayMark, { description: 'active stays of the bed whose patient is on leave (A21); the bed is kept' }),
  ),
  dischargeExpected: Type.Optional(
    Type.Array(StayMark, { description: 'active stays of the bed with a pending discharge (A16)' }),
  ),
}

export const Bed = Type.Object(
  {
    bed: Type.String({ description: 'bed id, as the occupants name it' }),
    room: Type.Optional(Type.String({ description: 'the room of its current or last occupant' })),
    active: Type.Array(WardOccupant, {
      description: 'the occupants in the bed now, oldest first (empty: the bed is free)',
    }),
    lastDischarged: Type.Optional(WardOccupant),
    ...stateFields,
  },
  { additionalProperties: false },
)

/** A bed's state alone: the answer of PUT /beds/:bed/state, the audit's record and the feed's. */
export const BedStatus = Type.Object(
  {
    facility: Type.Optional(Type.String()),
    bed: Type.String(),
    ...stateFields,
  },
  { additionalProperties: false },
)
export type BedStatus = Static<typeof BedStatus>

export const BedParams = Type.Object({ bed: Text(200, { description: 'the bed id' }) }, { additionalProperties: false })

export const BedStateBody = Type.Object(
  {
    state: Type.Union([HousekeepingWord, Type.Null()], {
      description: 'the housekeeping state to set, or null to clear it (the bed is then free, occupied or expected)',
    }),
    note: Type.Optional(Text(200, { description: 'why, for the ward (shown on the board)' })),
  },
  { additionalProperties: false },
)
export type BedStateBody = Static<typeof BedStateBody>

export const BedList = Type.Object(
  {
    facility: Type.Optional(Type.String({ description: 'the facility listed (absent: records without one)' })),
    beds: Type.Array(Bed),
    total: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
)
