import bearerAuth from '@fastify/bearer-auth'
import createError from '@fastify/error'
import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { ForbiddenFacilityError } from '../../domain/errors.js'
import type { Principal, Role } from '../../domain/principal.js'
import { errorBody } from '../errors.js'
import type { ProviderTokens } from './provider-tokens.js'
import { type AuthRefusal, refusalOf } from './refusals.js'
import { AuthThrottle } from './throttle.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The token id a refused request named with a wrong secret: the failure counts against it too. */
    wrongSecretFor: string | null
    principal: Principal
    /**
     * The stream ticket the request was authenticated with, not used up yet: the route spends it
     * once it has checked the rest of the request, so a refused request leaves it good.
     */
    streamTicket: string | null
  }
  interface FastifyContextConfig {
    /** The least role a route needs; by default GET needs `read` and everything else `write`. */
    role?: Role
    /** The route also takes a stream ticket (`?ticket=`) in place of the Bearer header. */
    streamTicket?: boolean
  }
}

export interface AuthPluginOptions {
  failureLimit: number
  failureWindowMs: number
  /** The principal a stream ticket stands for (without using it up), or null for a used, unknown or expired one. */
  peekTicket: (ticket: string) => Principal | null
  /** Told of each refused authentication, with why (the operators' metrics). */
  onRefused?: (reason: AuthRefusal) => void
}

function rejected(message: string, refusal: AuthRefusal): Error {
  return Object.assign(new TokenRejectedError(message), { refusal })
}

const TokenRejectedError = createError('TOKEN_REJECTED', '%s', 401)
const RoleForbiddenError = createError('ROLE_FORBIDDEN', 'this operation needs a %s token; this token has role %s', 403)
const TooManyFailuresError = createError(
  'TOO_MANY_AUTH_FAILURES',
  'too many failed authentications from this address or for this token; retry in %s seconds (a valid token is accepted meanwhile)',
  429,
)

const REJECTIONS = {
  malformed: 'the bearer token is malformed',
  unknown: 'the bearer token is not valid',
  expired: 'the bearer token has expired',
  revoked: 'the bearer token has been revoked',
} as const

const ClaimRefusedError = createError('CLAIM_REFUSED', '%s', 403)
const KeysUnavailableError = createError('PROVIDER_KEYS_UNAVAILABLE', '%s; service tokens still work', 503)
const AccountBlockedError = createError('ACCOUNT_BLOCKED', 'the account %s is blocked on this service', 401)

const TicketWithTokenError = createError(
  'TICKET_WITH_TOKEN',
  'send either a stream ticket or a bearer token, not both',
  400,
)

const RANK: Record<Role, number> = { read: 0, write: 1, admin: 2 }

/** The stream ticket of a request, on the routes that take one. */
function ticketOf(request: FastifyRequest): string | undefined {
  if (!request.routeOptions.config.streamTicket) return undefined
  const ticket = (request.query as { ticket?: unknown }).ticket
  return typeof ticket === 'string' ? ticket : undefined
}

function requiredRole(request: FastifyRequest): Role {
  const configured = request.routeOptions.config.role
  if (configured) return configured
  return request.method === 'GET' || request.method === 'HEAD' ? 'read' : 'write'
}

/**
 * Authentication and authorization for every route registered in the same scope: an `fs_` Bearer
 * token is looked up in the database on each request (so CLI changes count at once), any other is
 * taken for the identity provider's (./provider-tokens.ts) when one is set; a blocked account is
 * refused either way, and the route's role is checked before the body is even read. Failures are counted per address (and per
 * token id when a known id comes with a wrong secret); past the limit a failing request is
 * answered 429 instead of 401. The credentials are always checked first, so a valid token is
 * never refused for failures it did not make, whoever shares its address or knows its id.
 */
export default fp<AuthPluginOptions>(
  async function authPlugin(fastify, opts) {
    const throttle = new AuthThrottle(opts.failureLimit, opts.failureWindowMs)
    fastify.decorateRequest('wrongSecretFor', null)
    fastify.decorateRequest('streamTicket', null)

    function refuse(request: FastifyRequest, reply: FastifyReply, error: Error, done: (error: Error) => void) {
      // Only a token that is not valid counts as a failed authentication: an authentic provider
      // token without a mapped role (403), or no provider keys yet (503), is no one guessing.
      const status = (error as { statusCode?: number }).statusCode
      if (status === 403 || status === 503) {
        opts.onRefused?.(refusalOf(error))
        request.log.info('refused: %s', error.message)
        if (status === 403) return done(error)
        // Sent here: the error handler hides every 5xx as an internal error, and this one is not.
        const code = (error as { code?: string }).code
        return reply
          .code(503)
          .header('retry-after', '30')
          .send(errorBody(503, error.message, code))
      }
      const keys = failureKeys(request)
      const wait = throttle.retryAfter(keys)
      opts.onRefused?.(wait > 0 ? 'throttled' : refusalOf(error))
      if (wait > 0) {
        reply.header('retry-after', String(wait))
        return done(new TooManyFailuresError(wait))
      }
      // One line per refusal until the limit, then one saying so, then none: a tablet knocking with
      // a stale token all day does not flood the log.
      request.log.info('unauthorized: %s', error.message)
      for (const key of throttle.fail(keys)) {
        request.log.warn({ throttled: key }, 'failed authentications reached the limit; further failures get 429')
      }
      done(error)
    }

    function failureKeys(request: FastifyRequest): string[] {
      const keys = [`address ${request.ip}`]
      if (request.wrongSecretFor !== null) keys.push(`token ${request.wrongSecretFor}`)
      return keys
    }

    const provider = fastify.providerTokens
    const blocked = fastify.repos.blockedAccounts

    function accept(request: FastifyRequest, principal: Principal): true {
      if (blocked.isBlocked(principal.account)) throw new AccountBlockedError(principal.account)
      request.principal = principal
      return true
    }

    async function checkProviderToken(tokens: ProviderTokens, token: string, request: FastifyRequest) {
      const result = await tokens.check(token)
      if (result.ok) {
        accept(request, result.principal)
        // Whether the person is an admin, and of which facility, is known only from their tokens:
        // kept for the notifications only admins get (db/repositories/provider-admins.ts).
        fastify.repos.providerAdmins
          .saw(result.principal)
          // A storage fault is logged and on /health already; it is tried again on the next request.
          ?.catch((error: unknown) => request.log.debug({ err: error }, 'a provider admin could not be recorded'))
        return true
      }
      if (result.status === 403) throw new ClaimRefusedError(result.message)
      if (result.status === 503) throw new KeysUnavailableError(result.message)
      throw rejected(result.message, 'provider_token')
    }

    await fastify.register(bearerAuth, {
      addHook: false,
      keys: [],
      // The scheme name is case-insensitive in HTTP (RFC 9110 §11.1): `bearer` and `BEARER` work too.
      specCompliance: 'rfc6749',
      // refuse() below logs refusals, knowing whether the request is throttled; this plugin's own
      // line (one per failure, throttled or not) is kept for tracing only.
      verifyErrorLogLevel: 'trace',
      auth(token: string, request: FastifyRequest) {
        // Service tokens always start with fs_; anything else is the provider's, when there is one.
        if (provider !== null && !token.startsWith('fs_')) return checkProviderToken(provider, token, request)
        const result = fastify.tokens.check(token)
        if (!result.ok) {
          if (result.wrongSecretFor !== undefined) request.wrongSecretFor = result.wrongSecretFor
          throw rejected(REJECTIONS[result.reason], result.reason)
        }
        return accept(request, result.principal)
      },
    })

    fastify.decorateRequest('principal', null as unknown as Principal)

    fastify.addHook('onRequest', function authenticate(request: FastifyRequest, reply: FastifyReply, done) {
      const authorize = () => {
        const needed = requiredRole(request)
        if (RANK[request.principal.role] < RANK[needed])
          return done(new RoleForbiddenError(needed, request.principal.role))
        done()
      }
      const ticket = ticketOf(request)
      if (ticket !== undefined) {
        if (request.headers.authorization !== undefined) return done(new TicketWithTokenError())
        const principal = opts.peekTicket(ticket)
        if (!principal)
          return refuse(request, reply, rejected('the stream ticket is unknown, used or expired', 'ticket'), done)
        request.principal = principal
        request.streamTicket = ticket
        return authorize()
      }
      fastify.verifyBearerAuth?.(request, reply, (error?: Error) => {
        if (error) return refuse(request, reply, error, done)
        authorize()
      })
    })
  },
  { name: 'auth', fastify: '5.x', dependencies: ['db', 'provider-tokens'] },
)

/**
 * The facility a new record gets: the token's own, or for a token without facility the one the
 * body names (or none). A facility-bound token naming another facility is refused.
 */
export function facilityForCreate(principal: Principal, requested: string | undefined): string | null {
  if (principal.facility === null) return requested ?? null
  if (requested !== undefined && requested !== principal.facility) {
    throw new ForbiddenFacilityError(principal.facility, requested)
  }
  return principal.facility
}
