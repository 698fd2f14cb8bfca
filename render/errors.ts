import createError from '@fastify/error'
import { PROJECT_ROOT } from '../lib/product-files.js'

export type RenderErrorCode =
  | 'RENDER_COMPILE_FAILED'
  | 'RENDER_FAILED'
  | 'RENDER_TIMEOUT'
  | 'RENDER_MEMORY_LIMIT'
  | 'RENDER_OUTPUT_TOO_LARGE'
  | 'RENDER_BUSY'
  | 'RENDER_CANCELLED'

/**
 * Common base of every render error, so callers can write `err instanceof RenderError`. The
 * concrete classes come from @fastify/error, which makes Fastify answer `{statusCode, error,
 * message, code}`: 422 for what the layout did; 503 when the print queue is full (the caller may
 * retry; plugins/errors.ts adds Retry-After); 499, the status proxies log for "the client closed
 * the connection", for a print its caller gave up on while it waited (nobody reads that answer).
 */
export class RenderError extends Error {
  declare readonly code: RenderErrorCode
  declare readonly statusCode: 422 | 499 | 503
  declare readonly retryAfterSeconds?: number
}

// @fastify/error types its Base as ErrorConstructor (callable); a class works at runtime.
const base = RenderError as unknown as ErrorConstructor

const constructors = {
  RENDER_COMPILE_FAILED: createError('RENDER_COMPILE_FAILED', '%s', 422, base),
  RENDER_FAILED: createError('RENDER_FAILED', '%s', 422, base),
  RENDER_TIMEOUT: createError('RENDER_TIMEOUT', '%s', 422, base),
  RENDER_MEMORY_LIMIT: createError('RENDER_MEMORY_LIMIT', '%s', 422, base),
  RENDER_OUTPUT_TOO_LARGE: createError('RENDER_OUTPUT_TOO_LARGE', '%s', 422, base),
  RENDER_BUSY: createError('RENDER_BUSY', '%s', 503, base),
  RENDER_CANCELLED: createError('RENDER_CANCELLED', '%s', 499, base),
} as const

/** How long a caller refused with RENDER_BUSY waits: a print takes milliseconds to a second. */
const BUSY_RETRY_AFTER_SECONDS = 1

export const RenderCompileFailedError = constructors.RENDER_COMPILE_FAILED
export const RenderFailedError = constructors.RENDER_FAILED
export const RenderTimeoutError = constructors.RENDER_TIMEOUT
export const RenderMemoryLimitError = constructors.RENDER_MEMORY_LIMIT
export const RenderOutputTooLargeError = constructors.RENDER_OUTPUT_TOO_LARGE

const MAX_MESSAGE_CHARS = 4000

/** Messages can echo template text; host paths are scrubbed as a last line of defence. */
export function renderError(code: RenderErrorCode, message: string): RenderError {
  const error = new constructors[code](scrubHostPaths(truncate(message))) as unknown as RenderError
  return code === 'RENDER_BUSY' ? Object.assign(error, { retryAfterSeconds: BUSY_RETRY_AFTER_SECONDS }) : error
}

function truncate(message: string): string {
  return message.length > MAX_MESSAGE_CHARS ? `${message.slice(0, MAX_MESSAGE_CHARS)}…` : message
}

const hostRoots = [...new Set([process.cwd(), PROJECT_ROOT.replace(/\/$/, '')])]
  .filter((root) => root.length > 1)
  .sort((a, b) => b.length - a.length)

function scrubHostPaths(message: string): string {
  let scrubbed = message
  for (const root of hostRoots) scrubbed = scrubbed.split(root).join('<host>')
  return scrubbed.replace(/(?:<host>\/)?node_modules\/[^\s'")]*/g, '<module>')
}
