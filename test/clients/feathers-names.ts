import { errors, type FeathersError } from '@feathersjs/errors'

/**
 * The error class name for each status, read from the real @feathersjs/errors package: the oracle
 * the service's own table (plugins/errors.ts) is checked against.
 */
export const FEATHERS_NAME_BY_STATUS: ReadonlyMap<number, string> = new Map(
  Object.values(errors)
    .map((ErrorClass) => new (ErrorClass as new () => FeathersError)())
    .filter((error) => typeof error.code === 'number')
    .map((error) => [error.code, error.name] as const),
)
