import { createHash } from 'node:crypto'
import createError from '@fastify/error'
import { Type } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { StoredAnswer } from '../db/repositories/idempotency-keys.js'
import { PROVIDER_ACCOUNT_PREFIX, type Principal } from '../domain/principal.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The Idempotency-Key request being processed: its answer is stored with the key. */
    idempotency: Pending | null
  }
  interface FastifyContextConfig {
    /**
     * `accept`: the route takes the Idempotency-Key header but stores no answer, because it changes
     * nothing a retry could repeat (rendering) or its answer must not be kept (a stream ticket).
     */
    idempotency?: 'accept'
  }
}

export interface IdempotencyOptions {
  ttlHours: number
}

const KeyReusedError = createError(
  'IDEMPOTENCY_KEY_REUSED',
  'this Idempotency-Key was used with another request (method, path or body); use a new key for a new request',
  422,
)
const KeyInFlightError = createError(
  'IDEMPOTENCY_KEY_IN_FLIGHT',
  'a request with this Idempotency-Key is still being processed; retry shortly to get its answer',
  409,
)

// The draft (IETF httpapi, "The Idempotency-Key HTTP Header Field") makes the value a structured
// string ("..."); a bare token, as most clients send it, is taken too. Visible ASCII without quote,
// backslash and comma (two headers joined by a proxy), 1 to 255 characters: a UUID fits.
const KEY_CHARS = '[\\x21\\x23-\\x2B\\x2D-\\x5B\\x5D-\\x7E]{1,255}'
export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      pattern: `^(?:"${KEY_CHARS}"|${KEY_CHARS})$`,
      description:
        'makes a retry safe: a retry with the same key and body gets the first answer and changes nothing again (docs/API.md)',
    }),
  ),
})

// A FHIR create's answer names its new resource too (Location, Last-Modified): a replay does as well.
const KEPT_HEADERS = ['etag', 'location', 'last-modified'] as const
const JSON_TYPE = 'application/json; charset=utf-8'
const HOUR_MS = 3_600_000

interface Pending {
  id: string
  /** The route answered through answerWrite (whether or not the answer was kept). */
  answered: boolean
  save: (status: number, body: string, headers: Record<string, string>) => void
}

/** JSON with object keys sorted, so two bodies that are equal as parsed JSON have the same text. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
    return `{${entries.join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

/**
 * What the request asks for: the method, the path with its query, the body as parsed JSON, and
 * If-Match (a PATCH or DELETE expecting another version is another request). The token is part of
 * the key's identity already; nothing else a client sends changes what a write does. Neither a URL
 * nor canonical JSON holds a raw newline, so the parts cannot run into each other; without If-Match
 * the text is what earlier versions hashed, so their stored keys still match after an upgrade.
 *
 * `actingAs`: the facility a provider account acts for (`null`: none) and its role, given for
 * provider principals only. Their token id is the account, which stays when the provider moves the
 * person to another ward or gives them another role; a request made for the new ward, or with the
 * new role, is another request than the one made before, so a key of the old one is refused (422)
 * rather than replaying its answer: a record of the ward the person left, or what only the old
 * role may see (an admin's view of a notification names its addressees). A service token's
 * facility and role are its for life: its text stays as it was.
 */
export function fingerprintOf(
  request: Pick<FastifyRequest, 'method' | 'url' | 'headers' | 'body'>,
  actingAs?: ActingAs,
): string {
  const ifMatch = request.headers['if-match']
  let text = `${request.method} ${request.url}\n${canonical(request.body ?? null)}`
  if (ifMatch !== undefined) text += `\nif-match ${ifMatch}`
  // JSON.stringify: `null` (no facility) and a facility named "null" are different texts.
  if (actingAs !== undefined) text += `\nfacility ${JSON.stringify(actingAs.facility)}\nrole ${actingAs.role}`
  return createHash('sha256').update(text).digest('base64url')
}

type ActingAs = Pick<Principal, 'facility' | 'role'>

/** What a provider principal acts as; undefined for a service token (its facility and role never change). */
function actingAsOf(principal: Principal): ActingAs | undefined {
  return principal.tokenId.startsWith(PROVIDER_ACCOUNT_PREFIX) ? principal : undefined
}

function keyOf(header: string): string {
  return header.startsWith('"') ? header.slice(1, -1) : header
}

/**
 * Runs a write and answers with `shape(result)`. With an Idempotency-Key the answer is stored in
 * the write's own transaction, so the change and its answer are durable together; a write that
 * changed nothing (marking seen again, a patch to the values already there) stores nothing, so a
 * key makes at most one change and keeps at most one answer, the answer of that change.
 */
export async function answerWrite<V, A>(
  request: FastifyRequest,
  reply: FastifyReply,
  write: () => Promise<V>,
  shape: (value: V) => A,
): Promise<A> {
  const pending = request.idempotency
  let payload: A | undefined
  // Through a follow-up even without a key: whether the write changed a row decides whether its
  // answer is a read for the read log (plugins/read-audit.ts).
  await request.server.writes.withFollowUp(function noteAnswer(value, changed) {
    request.writeChanged = changed
    payload = shape(value as V)
    if (!pending || !changed) return
    const headers: Record<string, string> = { 'content-type': JSON_TYPE }
    for (const name of KEPT_HEADERS) {
      const header = reply.getHeader(name)
      if (header !== undefined) headers[name] = String(header)
    }
    // The status the route set before its write (a FHIR create's 201), else 200: a replay gives it again.
    pending.save(reply.statusCode, String(reply.serialize(payload)), headers)
  }, write)
  if (pending) pending.answered = true
  return payload as A
}

function replay(reply: FastifyReply, stored: StoredAnswer): FastifyReply {
  reply.code(stored.status)
  for (const [name, value] of Object.entries(stored.headers)) reply.header(name, value)
  return reply.header('idempotent-replayed', 'true').send(stored.body)
}

/**
 * The Idempotency-Key header on every POST, PATCH and DELETE of the scope (docs/API.md): the answer
 * of the request that changed something is stored with the key, per token, in the change's own
 * transaction; a retry with the same request gets it again, a retry with another request is a 422,
 * a retry while the first is still running a 409. Answers that changed nothing (every 4xx, a write
 * with nothing to do) are not stored: a retry runs again. So the table grows only with changes,
 * each of which writes an audit entry too, and a token that only reads cannot fill it.
 */
export default fp<IdempotencyOptions>(
  async function idempotencyPlugin(fastify, opts) {
    const keys = fastify.repos.idempotencyKeys
    fastify.decorateRequest('idempotency', null)
    const ttlMs = opts.ttlHours * HOUR_MS
    // Requests being processed, by token and key. One process serves the database, so memory is
    // enough: after a crash nothing is in flight, and what committed is in the table.
    const inFlight = new Map<string, Pending>()

    // Only the routes that can change something take a key: a read runs no hook for it.
    fastify.addHook('onRoute', function documentHeader(route) {
      const methods = [route.method].flat()
      if (methods.every((m) => m === 'GET' || m === 'HEAD')) return
      route.schema ??= {}
      route.schema.headers = IdempotencyHeaders
      route.preHandler = [...[route.preHandler ?? []].flat(), takeKey]
    })

    async function takeKey(request: FastifyRequest, reply: FastifyReply) {
      const header = request.headers['idempotency-key']
      if (typeof header !== 'string' || request.method === 'GET' || request.method === 'HEAD') return
      if (request.routeOptions.config.idempotency === 'accept') return
      const { tokenId } = request.principal
      const key = keyOf(header)
      const actingAs = actingAsOf(request.principal)
      const fingerprint = fingerprintOf(request, actingAs)
      const stored = keys.find(tokenId, key, Date.now() - ttlMs)
      if (stored) {
        // A provider account's answer stored before 0.10.4 has neither facility nor role in its
        // text: refused too (422), since whom the person acts for now cannot be compared with it.
        if (stored.fingerprint !== fingerprint) throw new KeyReusedError()
        return replay(reply, stored)
      }
      const id = `${tokenId}\n${key}`
      if (inFlight.has(id)) {
        reply.header('retry-after', '1')
        throw new KeyInFlightError()
      }
      const pending: Pending = {
        id,
        answered: false,
        save: (status, body, headers) =>
          keys.save({ tokenId, key, fingerprint, createdAt: Date.now(), status, headers, body }),
      }
      inFlight.set(id, pending)
      request.idempotency = pending
    }

    // The answer is going out: the key is free for a retry. A refusal (4xx) changed nothing and is
    // not kept (docs/API.md): a retry runs again, e.g. with the right If-Match after a 412.
    fastify.addHook('onSend', function releaseKey(request, reply, payload, done) {
      const pending = request.idempotency
      if (!pending) return done(null, payload)
      request.idempotency = null
      if (inFlight.get(pending.id) === pending) inFlight.delete(pending.id)
      if (!pending.answered && reply.statusCode < 300) {
        request.log.error('a route answered an Idempotency-Key request without answerWrite: nothing stored')
      }
      done(null, payload)
    })

    await fastify.retention.add({ name: 'idempotency keys', prune: (now) => keys.prune(now - ttlMs) })
  },
  { name: 'idempotency', fastify: '5.x', dependencies: ['db', 'auth', 'retention'] },
)
