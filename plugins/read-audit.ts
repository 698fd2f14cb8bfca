import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { ReadOperation, ReadRecord } from '../db/repositories/read-log.js'
import { queryNames } from '../http/log-serializers.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route reads records: with AUDIT_READS=true each request leaves a read-log entry.
     * `write`: a write route whose answer is the record; an answer of a write that changed nothing
     * (a no-op patch, an Idempotency-Key replay) is a read, and is logged as a `get`.
     */
    readAudit?: ReadOperation | 'write'
  }
  interface FastifyRequest {
    /** A list's total, noted by its handler (lists are sent as ready JSON text, so no hook sees it). */
    listTotal: number | null
    /** The request's write changed rows (answerWrite notes it): its audit entry is the trace of the answer. */
    writeChanged: boolean
  }
}

export interface ReadAuditOptions {
  enabled: boolean
  retentionDays: number
}

const DAY_MS = 86_400_000

export function noteListTotal(request: FastifyRequest, total: number): void {
  request.listTotal = total
}

/** The record a route names: its id, or a bed (PUT /beds/:bed/state answers that bed's state). */
function recordIdOf(params: unknown): string | null {
  const { id, bed } = (params ?? {}) as { id?: string; bed?: string }
  return id ?? bed ?? null
}

/** The read-log entry of this answer, or null when the request read nothing to log. */
function readRecordOf(request: FastifyRequest, reply: FastifyReply): ReadRecord | null {
  const audit = request.routeOptions.config.readAudit
  // No principal: the request failed authentication, so nothing was read.
  if (audit === undefined || !request.principal) return null
  // A write that changed its record left an audit entry in its own transaction; one refused
  // (4xx) answered no record. Any other answer of a write route showed the record: a read.
  if (audit === 'write' && (request.writeChanged || reply.statusCode !== 200)) return null
  const operation = audit === 'write' ? 'get' : audit
  const { tokenId, account, facility } = request.principal
  const route = request.routeOptions.url ?? ''
  const list = operation === 'list'
  const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?') + 1) : ''
  return {
    account,
    tokenId,
    facility,
    resource: route.split('/')[1] ?? '',
    operation,
    route: `${request.method} ${route}`,
    status: reply.statusCode,
    recordId: list ? null : recordIdOf(request.params),
    filters: list ? queryNames(query) : null,
    total: list ? request.listTotal : null,
  }
}

/**
 * Read auditing (docs/SECURITY.md): one read-log entry per request to a route marked `readAudit`,
 * made by a token. The entry is written before the answer leaves, through the write queue, so it
 * joins the group commit of its turn instead of costing a commit of its own, and the answer waits
 * until that commit is on disk: a crash can lose only the entries of reads whose answers had not
 * left. An entry that cannot be written (a full disk, a lock) turns the answer into that storage
 * error: no record leaves unaudited. Off by default: without AUDIT_READS no hook is added at all.
 */
export default fp<ReadAuditOptions>(
  async function readAuditPlugin(fastify, opts) {
    // Decorated even when off: list handlers note their totals either way.
    fastify.decorateRequest('listTotal', null)
    fastify.decorateRequest('writeChanged', false)
    if (!opts.enabled) return
    const log = fastify.repos.readLog
    const queue = fastify.writes
    // Requests whose entry was tried: the error answer of one that failed passes without another.
    const tried = new WeakSet<FastifyRequest>()

    fastify.addHook('onSend', async function auditRead(request: FastifyRequest, reply: FastifyReply, payload) {
      if (tried.has(request)) return payload
      const entry = readRecordOf(request, reply)
      if (entry === null) return payload
      tried.add(request)
      const at = Date.now()
      try {
        await queue.run(() => log.append(entry, at))
      } catch (error) {
        // Answered by the error handler like a write's storage error, without the record's version.
        reply.removeHeader('etag')
        throw error
      }
      return payload
    })

    await fastify.retention.add({
      name: 'read-log entries',
      prune: (now) => log.prune(now - opts.retentionDays * DAY_MS),
    })

    // Entries of answers still waiting are written before the database closes (a queued job runs after them).
    fastify.addHook('onClose', async function flushReads() {
      await queue.run(() => undefined)
    })
  },
  { name: 'read-audit', fastify: '5.x', dependencies: ['db', 'auth', 'retention'] },
)
