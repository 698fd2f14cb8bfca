import createError from '@fastify/error'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { FeedStream } from '../../feed/stream.js'
import { MAX_TICKETS_PER_TOKEN } from '../../feed/tickets.js'
import { errorResponses, NoBody } from '../../schemas/common.js'
import { EventStream, EventsQuery, FEED_RESOURCES, type FeedResource, StreamTicket } from '../../schemas/events.js'

const TooManyStreamsError = createError('TOO_MANY_STREAMS', '%s', 429)
const InvalidLastEventIdError = createError(
  'INVALID_LAST_EVENT_ID',
  'Last-Event-ID must be an event id this service sent (a whole number)',
  400,
)

const TooManyTicketsError = createError(
  'TOO_MANY_TICKETS',
  'this token holds %s unused stream tickets, as many as it may; use one or wait for one to expire',
  429,
)
// Used by another request with the same ticket between the check of this one and its opening.
const TicketSpentError = createError('TOKEN_REJECTED', 'the stream ticket is unknown, used or expired', 401)

const UnknownResourceError = createError(
  'UNKNOWN_RESOURCE',
  'querystring.resources: unknown resource %s (known: %s)',
  400,
)

const REFUSALS = {
  'too-many-streams': 'the service has as many open event streams as it allows; retry later',
  'too-many-streams-for-token': 'this token has as many open event streams as it may; close one first',
} as const

const RETRY_AFTER_SECONDS = '5'
const tags = ['live feed']

function resourcesOf(list: string | undefined): Set<FeedResource> {
  if (list === undefined) return new Set(FEED_RESOURCES)
  const names = list.split(',')
  const unknown = names.find((name) => !(FEED_RESOURCES as readonly string[]).includes(name))
  if (unknown !== undefined) throw new UnknownResourceError(`'${unknown}'`, FEED_RESOURCES.join(', '))
  return new Set(names as FeedResource[])
}

function lastEventIdOf(header: string | string[] | undefined, query: string | undefined): number | null {
  const value = Array.isArray(header) ? header[0] : (header ?? query)
  if (value === undefined || value === '') return null
  if (!/^(0|[1-9][0-9]{0,15})$/.test(value)) throw new InvalidLastEventIdError()
  return Number(value)
}

/** The live feed over Server-Sent Events (docs/EVENTS.md). */
const eventRoutes: FastifyPluginAsyncTypebox = async function eventRoutes(fastify) {
  fastify.get(
    '/events',
    {
      sse: { kind: 'only' },
      // A browser's EventSource cannot send the Authorization header: a stream ticket stands in.
      config: { streamTicket: true },
      schema: {
        tags,
        summary: 'a text/event-stream of the changes the caller may read, resumable by event id',
        querystring: EventsQuery,
        response: { 200: { content: { 'text/event-stream': { schema: EventStream } } }, ...errorResponses(406) },
      },
    },
    async function streamEvents(request, reply) {
      const lastEventId = lastEventIdOf(request.headers['last-event-id'], request.query.lastEventId)
      const resources = resourcesOf(request.query.resources)
      const refusal = fastify.feed.hub.refusal(request.principal)
      if (refusal) {
        reply.header('retry-after', RETRY_AFTER_SECONDS)
        throw new TooManyStreamsError(REFUSALS[refusal])
      }
      // Only a request that opens its stream uses its ticket up: one refused above may retry with it.
      if (request.streamTicket !== null && !fastify.feed.spendTicket(request.streamTicket)) throw new TicketSpentError()
      reply.header('cache-control', 'no-store')
      reply.sse.keepAlive()
      reply.sse.sendHeaders()
      // Node holds the head back until the first write, and a resumed stream with nothing missed
      // has none yet: the client must see its stream open (EventSource's `open`) at once.
      reply.raw.flushHeaders()
      const stream = new FeedStream(request.principal, resources, reply.raw, {
        pos: 0,
        bufferLimit: fastify.feed.bufferLimit,
      })
      fastify.feed.hub.open(stream, lastEventId)
    },
  )

  fastify.post(
    '/events/tickets',
    {
      // Asking for a ticket changes nothing but the caller's own state: a read token may.
      // A retry simply gets a new ticket: a ticket is a credential and is never stored.
      config: { role: 'read', idempotency: 'accept' },
      schema: {
        tags,
        summary: 'a single-use ticket that opens one event stream within 30 s (for EventSource)',
        description: `A token may hold ${MAX_TICKETS_PER_TOKEN} unused tickets; past that, 429 TOO_MANY_TICKETS with Retry-After.`,
        body: NoBody,
        response: { 200: StreamTicket, ...errorResponses() },
      },
    },
    async function issueStreamTicket(request, reply) {
      // A ticket is a credential for 30 s: nothing on the way may keep a copy.
      reply.header('cache-control', 'no-store')
      const issued = fastify.feed.tickets.issue(request.principal.tokenId)
      if ('refused' in issued) {
        reply.header('retry-after', String(Math.max(1, Math.ceil(issued.retryAfterMs / 1000))))
        throw new TooManyTicketsError(MAX_TICKETS_PER_TOKEN)
      }
      return issued
    },
  )
}

export default eventRoutes
