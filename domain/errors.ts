import createError from '@fastify/error'

// Errors that name a rule of the ward. The repositories raise them; each carries its HTTP status
// and a stable code, and the one error handler (plugins/errors.ts) sends them in the contract's shape.
export const NotFoundError = createError('NOT_FOUND', '%s %s not found', 404)
export const PreconditionFailedError = createError(
  'PRECONDITION_FAILED',
  'If-Match does not match the current version of %s %s (now %s)',
  412,
)
export const ForbiddenFacilityError = createError(
  'FACILITY_FORBIDDEN',
  'this token is bound to facility %s and cannot write records of facility %s',
  403,
)

// One bed, one active occupant (BED_POLICY=exclusive): the database holds the rule with a partial
// unique index (db/bed-policy.ts); the ward-occupant repository turns its conflict into this error.
export const BedOccupiedError = createError('BED_OCCUPIED', 'bed %s is occupied by ward occupant %s', 409)
// A discharge happens once; discharging again would overwrite who discharged and when.
export const AlreadyDischargedError = createError('ALREADY_DISCHARGED', 'ward occupant %s was already discharged', 409)
// An admin's retry or dismissal of an ADT message that is no longer parked (resolved meanwhile).
export const Hl7NotParkedError = createError('HL7_NOT_PARKED', 'HL7 message %s is %s, not parked', 409)
// An admin's retry of a parked ADT message that still does not fit the ward; the message says why.
export const Hl7StillParkedError = createError('HL7_STILL_PARKED', 'still parked: %s', 409)
// An admin's retry of a parked ADT message that would now land in another facility than the one it
// was filed (listed, notified, authorised) under: its encounter lies elsewhere now or, for a message
// logged before migration 15, the settings it is read with changed. The other facility is not named:
// the admin asking may be bound to the first one.
export const Hl7FacilityChangedError = createError(
  'HL7_FACILITY_CHANGED',
  'HL7 message %s was parked under facility %s and would now apply to another; a retry never applies it elsewhere than it was filed: dismiss it, and resolve it where it belongs',
  409,
)
// A bed closed, being cleaned or contaminated (domain/bed-states.ts) is not given over the API;
// the message says which and since when, so the caller knows whom to ask.
export const BedNotAvailableError = createError<'BED_NOT_AVAILABLE', 409, [string, string, string, string]>(
  'BED_NOT_AVAILABLE',
  'bed %s is %s (since %s, set by %s) and not free for an admission; clear its state first (PUT /beds/:bed/state)',
  409,
)
// A bed state set on a bed the ward does not know (never occupied, not listed, not expected).
export const UnknownBedError = createError(
  'BED_NOT_FOUND',
  'bed %s is not a bed of %s: list it first (facility-service beds add)',
  404,
)
