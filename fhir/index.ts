import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { frameworkStatus, handleError, sendFrameworkError } from '../plugins/errors.js'
import { utf8JsonParser } from '../plugins/json-body.js'
import { FhirError, operationOutcome, outcomeOfErrorBody } from './outcome.js'
import type { FhirRegistry } from './registry.js'
import encounterRoutes, { encounterSystems } from './routes/encounter.js'
import locationRoutes from './routes/location.js'
import metadataRoutes from './routes/metadata.js'
import questionnaireRoutes from './routes/questionnaire.js'
import smartRoutes from './routes/smart.js'
import { createFhirViews } from './views.js'

export const FHIR_JSON = 'application/fhir+json'
const FHIR_CONTENT_TYPE = `${FHIR_JSON}; charset=utf-8`

/** What a FHIR client may ask for (http://hl7.org/fhir/R4/http.html#mime-type); only JSON is served. */
const JSON_TYPES = new Set(['application/fhir+json', 'application/json+fhir', 'application/json', 'json'])
const ANY = new Set(['*/*', 'application/*'])

/** Whether `Accept` lets a JSON answer through (absent: anything goes). */
function acceptsJson(accept: string | undefined): boolean {
  if (accept === undefined || accept.trim() === '') return true
  return accept.split(',').some((part) => {
    const [type = '', ...params] = part.split(';').map((p) => p.trim().toLowerCase())
    const q = params.find((p) => p.startsWith('q='))
    if (q !== undefined && Number(q.slice(2)) === 0) return false
    return JSON_TYPES.has(type) || ANY.has(type)
  })
}

function formatOf(request: FastifyRequest): string | string[] | undefined {
  const format = (request.query as Record<string, unknown> | undefined)?._format
  if (typeof format === 'string') return format
  return format === undefined ? undefined : []
}

/** The 406 of a request for XML or anything but JSON (`Accept`, or `_format`, which wins). */
export function negotiationError(request: FastifyRequest): FhirError | null {
  const format = formatOf(request)
  // Given twice (or with brackets), neither the first nor the last may quietly win.
  if (Array.isArray(format)) return new FhirError(400, 'invalid', '_format may be given once', ['_format'])
  if (format !== undefined) {
    if (JSON_TYPES.has(format.split(';')[0]?.trim().toLowerCase() ?? '')) return null
    return new FhirError(
      406,
      'not-supported',
      `_format=${format} is not served: this server answers JSON only (_format=json)`,
      ['_format'],
    )
  }
  if (acceptsJson(request.headers.accept)) return null
  return new FhirError(
    406,
    'not-supported',
    `Accept: ${request.headers.accept} is not served: this server answers ${FHIR_JSON} only`,
  )
}

/** Whether a payload is already a FHIR resource's JSON (a success, or an OperationOutcome). */
function isOutcome(payload: unknown): boolean {
  return typeof payload === 'string' && payload.startsWith('{"resourceType":"OperationOutcome"')
}

/**
 * What every answer under /fhir shares, in each scope that registers FHIR routes: FHIR JSON bodies
 * are read like JSON; XML or anything else asked for is a 406; every answer is
 * `application/fhir+json`, and every error an OperationOutcome: a FhirError as it says, any other
 * (a schema 400, the auth plugin's 401/403/503, a rate limit's 429, a storage fault's 503) from the
 * error body the rest of the API would have sent, turned into one on its way out.
 */
export function fhirConventions(scope: FastifyInstance) {
  scope.addContentTypeParser(
    ['application/fhir+json', 'application/json+fhir'],
    { parseAs: 'buffer' },
    utf8JsonParser(scope),
  )

  scope.addHook('onRequest', function negotiate(request, _reply, done) {
    done(negotiationError(request) ?? undefined)
  })

  scope.setErrorHandler(function fhirErrors(error: FastifyError | FhirError, request, reply) {
    // Any other error is answered by the service's own handler; onSend turns its body into an outcome.
    if (!(error instanceof FhirError)) return handleError(error, request, reply)
    if (error.statusCode === 401) reply.header('www-authenticate', 'Bearer realm="facility-service"')
    // The issue code only: the diagnostics echo the request (a parameter's value, a stray path,
    // a body's resourceType), which may name a patient, and the log keeps no values.
    request.log.info({ fhirIssue: error.issueCode }, 'FHIR request refused')
    return reply
      .code(error.statusCode)
      .type(FHIR_CONTENT_TYPE)
      .send(JSON.stringify(operationOutcome(error.issueCode, error.message, { expression: error.expression })))
  })

  scope.addHook('onSend', function asFhir(_request, reply: FastifyReply, payload, done) {
    if (reply.statusCode === 304 || payload === null || payload === undefined) return done(null, payload)
    if (reply.statusCode >= 400 && !isOutcome(payload)) {
      let body: { message?: unknown; code?: unknown } = {}
      try {
        body = JSON.parse(String(payload))
      } catch {
        // not JSON (a stream or text from a plugin): the status says enough
      }
      reply.type(FHIR_CONTENT_TYPE)
      return done(null, JSON.stringify(outcomeOfErrorBody(reply.statusCode, body)))
    }
    reply.type(FHIR_CONTENT_TYPE)
    done(null, payload)
  })
}

/**
 * The server's `frameworkErrors`: a path the router refuses before any hook runs (not valid
 * percent-encoding, an id over maxParamLength) is, under /fhir, an OperationOutcome like every
 * other FHIR error; elsewhere the API's own error body.
 */
export function sendRoutingError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (!/^\/fhir(?:[/?]|$)/.test(request.url)) return sendFrameworkError(error, request, reply)
  const status = frameworkStatus(error)
  const outcome = outcomeOfErrorBody(status, { message: error.message, code: error.code })
  return reply.code(status).type(FHIR_CONTENT_TYPE).send(JSON.stringify(outcome))
}

export interface FhirPluginOptions {
  registry: FhirRegistry
}

/** The FHIR routes that need a token: registered inside the authenticated scope at /fhir. */
export default async function fhirApi(scope: FastifyInstance, opts: FhirPluginOptions) {
  fhirConventions(scope)
  scope.addHook('onRoute', function noteInteraction(route) {
    for (const method of [route.method].flat()) opts.registry.note({ ...route, method, url: route.url })
  })
  scope.setNotFoundHandler(function fhirNotFound(request) {
    throw new FhirError(
      404,
      'not-found',
      `there is no FHIR interaction at ${request.method} ${request.url.split('?')[0]}`,
    )
  })
  const views = createFhirViews(scope, encounterSystems(scope.config), scope.config.FHIR_CACHE_BYTES)
  await scope.register(locationRoutes, { views })
  await scope.register(encounterRoutes, { views })
  await scope.register(questionnaireRoutes)
}

/** The FHIR routes anyone may read (the CapabilityStatement, the SMART configuration): registered at /fhir outside the authenticated scope. */
export async function fhirPublic(scope: FastifyInstance, opts: FhirPluginOptions) {
  fhirConventions(scope)
  await scope.register(metadataRoutes, { registry: opts.registry })
  await scope.register(smartRoutes)
}
