import { isUtf8 } from 'node:buffer'
import createError from '@fastify/error'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { InvalidBodyError, unstorableValue } from '../lib/json-values.js'

export const UnsupportedCharsetError = createError('UNSUPPORTED_CHARSET', '%s', 415)
export const InvalidEncodingError = createError('INVALID_ENCODING', '%s', 400)

const CHARSET = /;\s*charset\s*=\s*"?([^";\s]*)/i

/** Whether a JSON schema lets the body be missing (`NoBody`: null or `{}`). */
function acceptsNull(schema: unknown): boolean {
  if (schema === null || typeof schema !== 'object') return false
  const { type, anyOf, oneOf } = schema as { type?: unknown; anyOf?: unknown; oneOf?: unknown }
  if (type === 'null' || (Array.isArray(type) && type.includes('null'))) return true
  return [anyOf, oneOf].some((list) => Array.isArray(list) && list.some(acceptsNull))
}

/**
 * A body-less action (retry, dismiss, mark seen, a delete): a route that declares no body, or one
 * whose body may be missing. Generic HTTP clients send `Content-Type: application/json` with
 * nothing after it to such a route, which is no body, not a malformed one.
 */
function takesNoBody(request: FastifyRequest): boolean {
  const body = request.routeOptions.schema?.body
  return body === undefined || acceptsNull(body)
}

/**
 * JSON bodies are UTF-8 (RFC 8259): another declared charset is 415 and bytes that are not UTF-8
 * are 400, where Node would quietly turn them into U+FFFD and a name would be stored mangled.
 * Parsing itself stays Fastify's (prototype poisoning refused, the same error codes). An empty
 * body is no body on a route that takes none (takesNoBody), and a 400 on a route that needs one.
 */
/** The parser of UTF-8 JSON bodies (below), also for the FHIR endpoint's `application/fhir+json`. */
export function utf8JsonParser(fastify: FastifyInstance) {
  const parseJson = fastify.getDefaultJsonParser('error', 'error')
  return function parseUtf8Json(
    request: FastifyRequest,
    raw: Buffer,
    done: (error: Error | null, body?: unknown) => void,
  ) {
    const charset = CHARSET.exec(request.headers['content-type'] ?? '')?.[1]?.toLowerCase()
    if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
      return done(new UnsupportedCharsetError(`JSON bodies must be UTF-8, not '${charset}'`), undefined)
    }
    if (raw.length === 0 && takesNoBody(request)) return done(null, undefined)
    if (!isUtf8(raw)) return done(new InvalidEncodingError('the body is not valid UTF-8'), undefined)
    parseJson(request, raw.toString('utf8'), (error, body) => {
      if (error) return done(error, undefined)
      const problem = unstorableValue(body)
      done(problem === null ? null : new InvalidBodyError(problem), problem === null ? body : undefined)
    })
  }
}

export default fp(
  async function jsonBody(fastify: FastifyInstance) {
    fastify.removeContentTypeParser('application/json')
    fastify.addContentTypeParser('application/json', { parseAs: 'buffer' }, utf8JsonParser(fastify))
  },
  { name: 'json-body', fastify: '5.x' },
)
