import type { Socket } from 'node:net'
import type { FastifyError, FastifyReply, FastifyRequest, FastifySchemaValidationError } from 'fastify'
import fp from 'fastify-plugin'
import { faultOfError, RETRY_AFTER_SECONDS, storageError } from '../db/storage-faults.js'
import { ErrorBody } from '../schemas/common.js'

// Taken from the CommonJS module: an ES import of node:http builds its whole namespace, which on
// Node 26 (measured) loads the fetch implementation (undici, about 3 MB of heap) the server never uses.
const { STATUS_CODES } = process.getBuiltinModule('node:http')

type SchemaContext = Parameters<NonNullable<import('fastify').FastifyServerOptions['schemaErrorFormatter']>>[1]

function describePath(context: SchemaContext, error: FastifySchemaValidationError): string {
  const segments = (error.instancePath ?? '')
    .split('/')
    .filter((s) => s.length > 0)
    .map((s) => (/^\d+$/.test(s) ? `[${s}]` : `.${s}`))
  return `${context}${segments.join('')}`
}

function describeError(context: SchemaContext, error: FastifySchemaValidationError): string {
  const where = describePath(context, error)
  const params = error.params as Record<string, unknown>
  switch (error.keyword) {
    case 'additionalProperties':
      return `${where} has unknown property '${String(params.additionalProperty)}'`
    case 'required':
      return `${where} must have property '${String(params.missingProperty)}'`
    case 'enum':
      return `${where} must be one of: ${(params.allowedValues as unknown[]).join(', ')}`
    default:
      return `${where} ${error.message ?? 'is invalid'}`
  }
}

/**
 * For a value that may take one of several shapes (anyOf), Ajv reports every branch that failed plus
 * a summary. The summary says nothing, and "must be null" beside "has unknown property 'x'" at the
 * same place only distracts: keep the most specific messages.
 */
function mostSpecific(errors: FastifySchemaValidationError[]): FastifySchemaValidationError[] {
  if (!errors.some((e) => e.keyword === 'anyOf')) return errors
  const specific = errors.filter((e) => e.keyword !== 'anyOf')
  const shapeProblemAt = new Set(specific.filter((e) => e.keyword !== 'type').map((e) => e.instancePath))
  const kept = specific.filter((e) => e.keyword !== 'type' || !shapeProblemAt.has(e.instancePath))
  return kept.length > 0 ? kept : errors
}

/** Validation messages that name the offending field, e.g. "body has unknown property 'ocupiedBy'". */
export function formatSchemaErrors(errors: FastifySchemaValidationError[], context: SchemaContext): Error {
  // allErrors is on so an unknown property is named even beside a missing one; a few are enough.
  const messages = [...new Set(mostSpecific(errors).map((e) => describeError(context, e)))]
  return new Error(messages.slice(0, 5).join('; '))
}

interface ErrorLike {
  statusCode?: number
  code?: string
  message?: string
  validation?: unknown
  headers?: Record<string, string>
  /** Set on a deliberate 503 (busy, try again): answered as it is, with this Retry-After. */
  retryAfterSeconds?: number
}

/**
 * The `@feathersjs/errors` class of each status that has one: the origin platform's clients rebuild
 * an error body into that class by its `name` (so `err instanceof NotFound` works). Keyed by status,
 * so every error the service answers gets it, whatever raised it; other statuses carry no name.
 */
export const FEATHERS_ERROR_NAMES: Readonly<Record<number, string>> = {
  400: 'BadRequest',
  401: 'NotAuthenticated',
  402: 'PaymentError',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  408: 'Timeout',
  409: 'Conflict',
  410: 'Gone',
  411: 'LengthRequired',
  422: 'Unprocessable',
  429: 'TooManyRequests',
  500: 'GeneralError',
  501: 'NotImplemented',
  502: 'BadGateway',
  503: 'Unavailable',
}

/** The contract's error body (CONTRACT.md §3). */
export function errorBody(statusCode: number, message: string, code: string | undefined) {
  const name = FEATHERS_ERROR_NAMES[statusCode]
  return { statusCode, error: STATUS_CODES[statusCode] ?? 'Error', message, code, ...(name ? { name } : {}) }
}

function sendError(reply: FastifyReply, statusCode: number, message: string, code: string | undefined) {
  return reply.code(statusCode).send(errorBody(statusCode, message, code))
}

/**
 * Errors Fastify raises while routing, before any hook runs (a path that is not valid
 * percent-encoding, a path parameter over maxParamLength): the same shape as every other error.
 * Without it Fastify answers a 414 with `"error": "Bad Request"`.
 */
export function sendFrameworkError(error: FastifyError, _request: FastifyRequest, reply: FastifyReply) {
  return sendError(reply, frameworkStatus(error), error.message, error.code)
}

/** The status of a routing error: its own when it is a 4xx, else 400 (it is about the request). */
export function frameworkStatus(error: FastifyError): number {
  return error.statusCode !== undefined && error.statusCode < 500 ? error.statusCode : 400
}

/** What Node's HTTP parser reports, and what the client is told, in the contract's error shape. */
const CLIENT_ERRORS: Record<string, { status: number; code: string; message: string }> = {
  ERR_HTTP_REQUEST_TIMEOUT: {
    status: 408,
    code: 'REQUEST_TIMEOUT',
    message: 'the request was not received completely within the request timeout',
  },
  HPE_HEADER_OVERFLOW: { status: 431, code: 'HEADERS_TOO_LARGE', message: 'the request headers are too large' },
}
const MALFORMED = { status: 400, code: 'MALFORMED_REQUEST', message: 'the request is not valid HTTP/1.1' }

/**
 * Errors on the connection before a request exists (a client too slow to send its request, headers
 * too large, bytes that are not HTTP): answered in the same shape as every other error, then the
 * connection is closed, since what follows on it cannot be trusted.
 */
export function handleClientError(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  const { status, code, message } = CLIENT_ERRORS[error.code ?? ''] ?? MALFORMED
  const body = JSON.stringify(errorBody(status, message, code))
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    )
  }
  socket.destroy()
}

/**
 * The one error handler: 4xx go out as they are, in the contract's shape; 5xx are logged with
 * the request id and answered without internals (no stack, no SQL), but for a 503 that says when to
 * try again (`retryAfterSeconds`: a full print queue), which is an answer, not a fault.
 */
export function handleError(error: FastifyError | ErrorLike, request: FastifyRequest, reply: FastifyReply) {
  if (error.validation) return sendError(reply, 400, error.message ?? 'invalid request', 'FST_ERR_VALIDATION')
  const fault = faultOfError(error)
  if (fault !== null) {
    // A storage fault is logged once per episode where it is noted (plugins/db.ts), not per request.
    request.server.storage?.report(error)
    const answer = storageError(fault)
    request.log.debug({ err: error }, 'storage fault')
    reply.header('retry-after', String(RETRY_AFTER_SECONDS[fault]))
    return sendError(reply, answer.statusCode, answer.message, answer.code)
  }
  const status = error.statusCode ?? 500
  if (status === 503 && 'retryAfterSeconds' in error && typeof error.retryAfterSeconds === 'number') {
    reply.header('retry-after', String(error.retryAfterSeconds))
    return sendError(reply, 503, error.message ?? 'Service Unavailable', error.code)
  }
  if (status < 400 || status >= 500) {
    request.log.error({ err: error }, 'request failed')
    return sendError(reply, 500, 'Internal Server Error', 'INTERNAL_ERROR')
  }
  if (status === 401) reply.header('www-authenticate', 'Bearer realm="facility-service"')
  return sendError(reply, status, error.message ?? STATUS_CODES[status] ?? 'Error', error.code)
}

/** The error handler and the 404 of every route. */
export default fp(
  async function errorsPlugin(fastify) {
    fastify.addSchema(ErrorBody)

    fastify.setErrorHandler(handleError)

    fastify.setNotFoundHandler(function handleNotFound(request, reply) {
      return sendError(reply, 404, `Route ${request.method} ${request.url.split('?')[0]} not found`, 'ROUTE_NOT_FOUND')
    })
  },
  { name: 'errors', fastify: '5.x' },
)
