import { createHash } from 'node:crypto'
import createError from '@fastify/error'
import { Type } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { StoredAnswer } from '../db/repositories/idempotency-keys.js'

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

const KEPT_HEADERS = ['etag'] as const
const JSON_TYPE = 'application/json; charset=utf-8'
const HOUR_MS = 3_600_000

interface Pending {
  id: string
  tokenId: string
  key: string
  fingerprint: string
  stored: boolean
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

function fingerprintOf(request: FastifyRequest): string {
  return createHash('sha256')
    .update(`${request.method} ${request.url}\n${canonical(request.body ?? null)}`)
    .digest('base64url')
}

function keyOf(header: string): string {
  return header.startsWith('"') ? header.slice(1, -1) : header
}

/**
 * Runs a write and answers with `shape(result)`. With an Idempotency-Key the answer is stored in
 * the write's own transaction, so the change and its answer are durable together.
 */
export async function answerWrite<V, A>(
  request: FastifyRequest,
  reply: FastifyReply,
  write: () => Promise<V>,
  shape: (value: V) => A,
): Promise<A> {
  const pending = request.idempotency
  if (!pending) return shape(await write())
  let payload: A | undefined
  await request.server.writes.withFollowUp(function storeAnswer(value) {
    payload = shape(value as V)
    const headers: Record<string, string> = { 'content-type': JSON_TYPE }
    for (const name of KEPT_HEADERS) {
      const header = reply.getHeader(name)
      if (header !== undefined) headers[name] = String(header)
    }
    pending.save(200, String(reply.serialize(payload)), headers)
  }, write)
  pending.stored = true
  return payload as A
}

function replay(reply: FastifyReply, stored: StoredAnswer): FastifyReply {
  reply.code(stored.status)
  for (const [name, value] of Object.entries(stored.headers)) reply.header(name, value)
  return reply.header('idempotent-replayed', 'true').send(stored.body)
}

/**
 * The Idempotency-Key header on every POST, PATCH and DELETE of the scope (docs/API.md): the first
 * request's final answer (2xx or 4xx, never 5xx, 429 or 503) is stored with the key, per token; a
 * retry with the same request gets it again, a retry with another request is a 422, a retry while
 * the first is still running a 409.
 */
export default fp<IdempotencyOptions>(
  async function idempotencyPlugin(fastify, opts) {
    const keys = fastify.repos.idempotencyKeys
    const queue = fastify.writes
    fastify.decorateRequest('idempotency', null)
    const ttlMs = opts.ttlHours * HOUR_MS
    // Requests being processed, by token and key. One process serves the database, so memory is
    // enough: after a crash nothing is in flight, and what committed is in the table.
    const inFlight = new Map<string, Pending>()

    fastify.addHook('onRoute', function documentHeader(route) {
      const methods = [route.method].flat()
      if (methods.every((m) => m === 'GET' || m === 'HEAD')) return
      route.schema ??= {}
      route.schema.headers = IdempotencyHeaders
    })

    fastify.addHook('preHandler', async function takeKey(request, reply) {
      const header = request.headers['idempotency-key']
      if (typeof header !== 'string' || request.method === 'GET' || request.method === 'HEAD') return
      if (request.routeOptions.config.idempotency === 'accept') return
      const { tokenId } = request.principal
      const key = keyOf(header)
      const fingerprint = fingerprintOf(request)
      const stored = keys.find(tokenId, key, Date.now() - ttlMs)
      if (stored) {
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
        tokenId,
        key,
        fingerprint,
        stored: false,
        save: (status, body, headers) =>
          keys.save({ tokenId, key, fingerprint, createdAt: Date.now(), status, headers, body }),
      }
      inFlight.set(id, pending)
      request.idempotency = pending
    })

    // A refusal (4xx) changed nothing, so it is stored in a transaction of its own, before it is sent.
    fastify.addHook('onSend', async function storeRefusal(request, reply, payload) {
      const pending = request.idempotency
      if (!pending) return payload
      request.idempotency = null
      try {
        const status = reply.statusCode
        const final = status >= 400 && status < 500 && status !== 408 && status !== 429
        if (!pending.stored && final && typeof payload === 'string') {
          const body = payload
          await queue.run(() => pending.save(status, body, { 'content-type': JSON_TYPE }))
        } else if (!pending.stored && status < 300) {
          request.log.error('a route answered an Idempotency-Key request without storing its answer')
        }
      } catch (error) {
        request.log.warn({ err: error }, 'the answer to an Idempotency-Key request could not be stored')
      } finally {
        if (inFlight.get(pending.id) === pending) inFlight.delete(pending.id)
      }
      return payload
    })

    await fastify.retention.add({ name: 'idempotency keys', prune: (now) => keys.prune(now - ttlMs) })
  },
  { name: 'idempotency', fastify: '5.x', dependencies: ['db', 'auth', 'retention'] },
)
