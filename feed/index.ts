import sseModule, { type SSEPluginOptions } from '@fastify/sse'
import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import type { FeedLog } from '../db/repositories/feed.js'
import type { Principal } from '../domain/principal.js'
import { tokenRefusal } from '../domain/principal.js'
import { PROVIDER_TOKEN_PREFIX } from '../plugins/auth/provider-tokens.js'
import { FeedHub } from './hub.js'
import { StreamTickets } from './tickets.js'

declare module 'fastify' {
  interface FastifyInstance {
    feed: Feed
  }
}

export interface Feed {
  hub: FeedHub
  log: FeedLog
  tickets: StreamTickets
  /**
   * The principal a stream ticket stands for, if the ticket is good and its token still valid,
   * without using the ticket up: a request is checked in full before spendTicket uses it.
   */
  peekTicket(ticket: string): Principal | null
  /** Uses a ticket up; false when it was used meanwhile (or expired). */
  spendTicket(ticket: string): boolean
  bufferLimit: number
}

export interface FeedOptions {
  retentionHours: number
  heartbeatMs: number
  pollMs: number
  maxStreams: number
  maxStreamsPerToken: number
  bufferBytes: number
}

// The package is CommonJS: its default import is the module itself, the plugin wrapped with
// fastify-plugin (so its route hook sees the routes registered after it), which its types miss.
const fastifySSE = sseModule as unknown as FastifyPluginAsync<SSEPluginOptions>

const TOKEN_CHECK_MS = 1000

type Validity = Principal & { expiresAt: number | null; revokedAt: number | null }

/**
 * The live feed (docs/EVENTS.md): the log of changes, the hub that pushes them to open streams,
 * and stream tickets for browsers. Routes are in routes/events.
 */
export default fp<FeedOptions>(
  async function feedPlugin(fastify, opts) {
    await fastify.register(fastifySSE, { heartbeatInterval: opts.heartbeatMs })
    const log = fastify.repos.feed
    const hub = new FeedHub(
      log,
      { maxStreams: opts.maxStreams, maxStreamsPerToken: opts.maxStreamsPerToken },
      function readFailed(error) {
        if (fastify.storage.report(error) === null) fastify.log.error({ err: error }, 'the live feed could not read')
      },
      () => fastify.writes.whenDurable(),
    )
    const tickets = new StreamTickets()

    // A ticket or a stream names a token id: a service token's, or a provider account's (oidc:...),
    // valid while one of that person's tokens is. A blocked account counts as revoked either way.
    function lookup(tokenId: string): Validity | undefined {
      const now = Date.now()
      let found: Validity | undefined
      if (tokenId.startsWith(PROVIDER_TOKEN_PREFIX)) {
        const session = fastify.providerTokens?.session(tokenId, now)
        if (session) found = { ...session.principal, expiresAt: session.expiresAt, revokedAt: null }
      } else found = fastify.tokens.get(tokenId)
      if (found && fastify.repos.blockedAccounts.isBlocked(found.account)) return { ...found, revokedAt: now }
      return found
    }

    function peekTicket(ticket: string): Principal | null {
      const tokenId = tickets.peek(ticket)
      const info = tokenId === null ? undefined : lookup(tokenId)
      if (!info || tokenRefusal(info, Date.now()) !== null) return null
      return { tokenId: info.tokenId, account: info.account, role: info.role, facility: info.facility }
    }

    const stopListening = log.onAppend(() => hub.wake())
    const timers = [
      setInterval(() => hub.pumpSafely(), opts.pollMs),
      setInterval(() => {
        try {
          hub.checkTokens(lookup)
        } catch (error) {
          fastify.storage.report(error)
        }
      }, TOKEN_CHECK_MS),
    ]
    for (const timer of timers) timer.unref()
    await fastify.retention.add({
      name: 'feed events',
      prune: (now) => log.prune(now - opts.retentionHours * 3_600_000),
    })

    const spendTicket = (ticket: string): boolean => tickets.redeem(ticket) !== null
    fastify.decorate('feed', { hub, log, tickets, peekTicket, spendTicket, bufferLimit: opts.bufferBytes })
    // Streams never end by themselves: ending them first lets the server close and the process
    // exit within the shutdown time, each client with a clean end of its response.
    fastify.addHook('preClose', function endStreams(done) {
      for (const timer of timers) clearInterval(timer)
      stopListening()
      hub.stop()
      done()
    })
  },
  { name: 'feed', fastify: '5.x', dependencies: ['db', 'retention', 'provider-tokens'] },
)
