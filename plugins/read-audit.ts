import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { createReadLog, type ReadOperation } from '../db/repositories/read-log.js'
import { faultOfError } from '../db/storage-faults.js'
import { writeQueue } from '../db/write-queue.js'
import { queryNames } from '../http/log-serializers.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route reads records: with AUDIT_READS=true each request leaves a read-log entry. */
    readAudit?: ReadOperation
  }
}

export interface ReadAuditOptions {
  enabled: boolean
  retentionDays: number
}

const PRUNE_EVERY_MS = 3_600_000
const DAY_MS = 86_400_000

// A list's total, noted by its handler (lists are sent as ready JSON text, so no hook sees it).
const listTotals = new WeakMap<FastifyRequest, number>()

export function noteListTotal(request: FastifyRequest, total: number): void {
  listTotals.set(request, total)
}

/**
 * Read auditing (docs/SECURITY.md): one read-log entry per request to a route marked `readAudit`,
 * made by a token. The entry is written after the answer, through the write queue, so it joins the
 * next group commit instead of costing a commit of its own; a crash can lose the entries of the
 * last moment. Off by default: without AUDIT_READS no hook is added at all.
 */
export default fp<ReadAuditOptions>(
  async function readAuditPlugin(fastify, opts) {
    if (!opts.enabled) return
    const log = createReadLog(fastify.db)
    const queue = writeQueue(fastify.db)

    fastify.addHook('onResponse', function auditRead(request: FastifyRequest, reply: FastifyReply, done) {
      const operation = request.routeOptions.config.readAudit
      // No principal: the request failed authentication, so nothing was read.
      if (operation === undefined || !request.principal) return done()
      const { tokenId, account, facility } = request.principal
      const route = request.routeOptions.url ?? ''
      const list = operation === 'list'
      const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?') + 1) : ''
      const entry = {
        account,
        tokenId,
        facility,
        resource: route.split('/')[1] ?? '',
        operation,
        route: `${request.method} ${route}`,
        status: reply.statusCode,
        recordId: list ? null : ((request.params as { id?: string }).id ?? null),
        filters: list ? queryNames(query) : null,
        total: list ? (listTotals.get(request) ?? null) : null,
      }
      const at = Date.now()
      queue
        .run(() => log.append(entry, at))
        .catch(function lost(error: unknown) {
          // A full disk or a lock is logged once per episode (plugins/db.ts), not once per read.
          if (faultOfError(error) !== null) request.log.debug({ err: error }, 'a read-log entry could not be written')
          else request.log.error({ err: error }, 'a read-log entry could not be written')
        })
      done()
    })

    async function prune() {
      const before = Date.now() - opts.retentionDays * DAY_MS
      let deleted: number
      do deleted = await queue.run(() => log.prune(before))
      while (deleted > 0)
    }
    const timer = setInterval(
      () => prune().catch((error) => fastify.log.error({ err: error }, 'read-log pruning failed')),
      PRUNE_EVERY_MS,
    )
    timer.unref()
    await prune().catch((error) => fastify.log.warn({ err: error }, 'read-log pruning failed; tried again in an hour'))

    // Entries still queued are written before the database closes (a queued job runs after them).
    fastify.addHook('onClose', async function flushReads() {
      clearInterval(timer)
      await queue.run(() => undefined)
    })
  },
  { name: 'read-audit', fastify: '5.x', dependencies: ['db', 'auth'] },
)
