import { InvalidArgumentError } from 'commander'
import { serviceAccountProblem } from '../domain/principal.js'
import { unstorableValue } from '../lib/json-values.js'

// Argument parsers for commander: each returns the value or throws the message the user sees.

export function nonEmpty(text: string): string {
  if (text.trim() === '') throw new InvalidArgumentError('must not be empty')
  return text
}

/** The account a service token acts as: never one of the identity provider's (`oidc:...`). */
export function serviceAccount(text: string): string {
  const problem = serviceAccountProblem(text)
  if (problem !== null) throw new InvalidArgumentError(problem)
  return text
}

/** A bed, room or facility: what the API accepts for them (1 to 200 characters). */
export function placeName(text: string): string {
  nonEmpty(text)
  if (text.length > 200) throw new InvalidArgumentError('must be at most 200 characters')
  return text
}

/** A JSON object the database can store as it is (the same rule as the API's `meta`). */
export function jsonObject(text: string): Record<string, unknown> {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new InvalidArgumentError('must be valid JSON, e.g. \'{"queue":"A"}\'')
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new InvalidArgumentError('must be a JSON object, e.g. \'{"queue":"A"}\'')
  const problem = unstorableValue(value, 'meta')
  if (problem !== null) throw new InvalidArgumentError(problem)
  return value as Record<string, unknown>
}

export function milliseconds(text: string): number {
  if (!/^\d{1,6}$/.test(text)) throw new InvalidArgumentError('must be a whole number of milliseconds, at most 999999')
  return Number(text)
}
