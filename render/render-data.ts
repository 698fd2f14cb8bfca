/**
 * The data a layout sees travels into the sandbox as one JSON string that the sandbox parses
 * itself, inside its own time and memory limits: nothing but text crosses the boundary, and
 * the layout gets a copy it may change freely. Records and caller data are JSON already; Dates
 * (which JSON would turn into text) travel tagged and come back as Dates inside.
 */
import { renderError } from './errors.js'

/**
 * Deeper data is refused before it reaches the sandbox. The API allows 64 levels in `data`,
 * `meta` and `config`, so real prints stay far below; the bound keeps both this walk and the
 * sandbox's parser within their stacks.
 */
export const MAX_DATA_DEPTH = 1000

/** The key of `{ "\u0000date": ms }`, which the sandbox turns back into a Date. */
export const DATE_TAG = '\u0000date'

export interface EncodedData {
  json: string
  /** Whether the sandbox must look for tagged Dates (most prints have none). */
  dates: boolean
}

class NotCopyable extends Error {}

export function encodeData(data: Record<string, unknown>): EncodedData {
  const state = { dates: false }
  try {
    return { json: JSON.stringify(plain(data, 1, state)), dates: state.dates }
  } catch (error) {
    const reason = error instanceof NotCopyable ? error.message : 'it cannot be written as JSON'
    throw renderError('RENDER_FAILED', `the render data cannot be copied into the sandbox: ${reason}`)
  }
}

/** A JSON-ready copy; what JSON would drop or change silently is refused instead. */
function plain(value: unknown, depth: number, state: { dates: boolean }): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean' || value === undefined) return value
  if (typeof value === 'number') {
    if (Number.isFinite(value)) return value
    throw new NotCopyable(`${value} is not a number JSON can hold`)
  }
  if (typeof value !== 'object') throw new NotCopyable(`a ${typeof value} cannot be copied`)
  if (depth > MAX_DATA_DEPTH)
    throw new NotCopyable(`it is nested deeper than ${MAX_DATA_DEPTH} levels, or contains itself`)
  if (value instanceof Date) {
    state.dates = true
    return { [DATE_TAG]: value.getTime() }
  }
  if (Array.isArray(value)) return value.map((item) => plain(item, depth + 1, state))
  const prototype = Object.getPrototypeOf(value)
  if (prototype !== Object.prototype && prototype !== null) {
    throw new NotCopyable(`a ${prototype?.constructor?.name ?? 'non-plain'} object cannot be copied`)
  }
  // No prototype, so a `__proto__` key stays an ordinary key.
  const copy: Record<string, unknown> = Object.create(null)
  for (const [key, item] of Object.entries(value)) copy[key] = plain(item, depth + 1, state)
  return copy
}
