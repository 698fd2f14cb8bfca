import createError from '@fastify/error'

// Errors that the data layer raises; each carries its HTTP status and a stable code, and the
// one error handler (plugins/errors.ts) sends them in the contract's shape.
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
