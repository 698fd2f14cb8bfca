import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { type Static, Type } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import { FAULT_MESSAGES } from '../../db/storage-faults.js'
import { ErrorBody, Timestamp } from '../../schemas/common.js'
import { Hl7Health, hl7Health, hl7Status } from './hl7-health.js'

const BackupHealth = Type.Object(
  {
    lastAt: Type.Optional(Timestamp),
    ageMs: Type.Optional(Type.Integer({ description: 'how old the newest good scheduled backup is' })),
    failing: Type.Optional(
      Type.Object({
        since: Timestamp,
        message: Type.String({ description: 'why the last backup failed (a full disk, a missing directory ...)' }),
      }),
    ),
  },
  { description: 'scheduled backups (only with BACKUP_DIR set); a failing backup does not make the service unhealthy' },
)
const ReplicationHealth = Type.Object(
  {
    running: Type.Boolean({ description: 'Litestream is running' }),
    lagMs: Type.Integer({ description: 'how long the oldest commit not yet on the replica has waited; 0: it has all' }),
    lastSyncAt: Type.Optional(Timestamp),
    restarts: Type.Integer({ description: 'how often Litestream was started again after it ended by itself' }),
    failing: Type.Optional(
      Type.Object({
        since: Timestamp,
        message: Type.String({ description: "Litestream's error (an unreachable replica, a refused key ...)" }),
      }),
    ),
  },
  {
    description:
      'continuous replication (only with REPLICA_URL set); failing replication does not make the service unhealthy',
  },
)
const ProviderHealth = Type.Object(
  {
    keys: Type.Integer({
      description: "the provider's keys held; 0: provider tokens are refused (503), service tokens work",
    }),
    loadedAt: Type.Optional(Timestamp),
    failing: Type.Optional(
      Type.Object({
        since: Timestamp,
        message: Type.String({ description: 'why the keys could not be fetched (the provider unreachable ...)' }),
      }),
    ),
  },
  {
    description:
      "the identity provider's keys (only with OIDC_ISSUER set); keys kept from an earlier fetch go on working while it fails",
  },
)
const Health = Type.Object({
  status: Type.Literal('ok'),
  database: Type.Literal('ok'),
  hl7: Type.Optional(Hl7Health),
  backups: Type.Optional(BackupHealth),
  replication: Type.Optional(ReplicationHealth),
  identityProvider: Type.Optional(ProviderHealth),
})
const CheckOk = Type.Object(
  { ok: Type.Boolean({ description: 'the check passes (details: with an admin token)' }) },
  { additionalProperties: false },
)
/** What /health tells without an admin token: the status of each check, none of its texts. */
const PublicHealth = Type.Object(
  {
    status: Type.Literal('ok'),
    database: Type.Literal('ok'),
    // Counts only, no texts: a monitor may alert on parked ADT messages without a token.
    hl7: Type.Optional(Hl7Health),
    backups: Type.Optional(CheckOk),
    replication: Type.Optional(CheckOk),
    identityProvider: Type.Optional(CheckOk),
  },
  // Closed, and first in the union below: the serializer takes the first shape an answer fits.
  { description: 'without an admin token: the status only', additionalProperties: false },
)
/** A sync of the WAL waiting longer than this makes /health unhealthy. */
export const SYNC_STALL_MS = 5000

const Unhealthy = Type.Object({
  status: Type.Literal('unavailable'),
  database: Type.String({ description: 'unreachable, full, io, corrupt or readonly' }),
  message: Type.Optional(Type.String({ description: 'what happened and what an operator should do' })),
  code: Type.Optional(Type.String({ description: 'the SQLite or system error code, e.g. SQLITE_FULL' })),
  since: Type.Optional(Timestamp),
})

type Detailed = Static<typeof Health>

/** The answer without its details: whether each check passes. */
function statusOnly(health: Detailed): Static<typeof PublicHealth> {
  const { status, database, hl7, backups, replication, identityProvider } = health
  return {
    status,
    database,
    ...(hl7 ? { hl7: hl7Status(hl7) } : {}),
    ...(backups ? { backups: { ok: backups.failing === undefined } } : {}),
    ...(replication ? { replication: { ok: replication.running && replication.failing === undefined } } : {}),
    // Keys kept from an earlier fetch still verify tokens: ok while any are held.
    ...(identityProvider ? { identityProvider: { ok: identityProvider.keys > 0 } } : {}),
  }
}

/**
 * Liveness and database check, without a token, for load balancers and service managers. It never
 * writes: whether the database takes writes is learnt from the writes themselves (a full disk, an
 * I/O error, a read-only file; db/storage-faults.ts), and it is unhealthy while that lasts. A lock
 * held by another process is not unhealthy: writes wait for it, and reads go on.
 */
const healthRoutes: FastifyPluginAsyncTypebox = async function healthRoutes(fastify) {
  const probe = fastify.db.prepare('SELECT 1')

  /**
   * The details (error texts naming directories, hosts, files) only for an admin token without a
   * facility, the operator's: any other request, a bad token included, gets the status alone, so
   * the route tells nothing about a token either (it is outside the authenticated scope, with no
   * throttle of failures, and needs none: every answer but an admin's is the same). A blocked
   * account is refused here as everywhere. 'unchecked': the check failed for a reason that is not
   * a storage fault (which the storage state reports); the service cannot tell anyone's token then.
   */
  function detailsAllowed(request: FastifyRequest): boolean | 'unchecked' {
    const token = /^bearer +(\S+)$/i.exec(request.headers.authorization ?? '')?.[1]
    if (token === undefined) return false
    try {
      const result = fastify.tokens.check(token)
      if (!result.ok || result.principal.role !== 'admin' || result.principal.facility !== null) return false
      return !fastify.repos.blockedAccounts.isBlocked(result.principal.account)
    } catch (error) {
      // A database that cannot tell the token cannot be healthy either: the check below says why,
      // to everyone alike, since the token could not be checked. Any other failure would answer
      // every authenticated request 500 while /health said ok: it is logged, and answered 503.
      if (fastify.storage.report(error) !== null) return false
      request.log.error({ err: error }, 'health: the token check failed')
      return 'unchecked'
    }
  }

  function backupHealth(): { backups?: Static<typeof BackupHealth> } {
    const status = fastify.backups.status()
    if (status === null) return {}
    const backups: Static<typeof BackupHealth> = {}
    if (status.last !== null) Object.assign(backups, { lastAt: status.last.at, ageMs: Date.now() - status.last.at })
    if (status.failing !== null) backups.failing = { ...status.failing }
    return { backups }
  }

  function replicationHealth(): { replication?: Static<typeof ReplicationHealth> } {
    const status = fastify.replication.status()
    if (status === null) return {}
    const { running, lagMs, lastSyncAt, restarts, failing } = status
    const replication: Static<typeof ReplicationHealth> = { running, lagMs: Math.round(lagMs), restarts }
    if (lastSyncAt !== null) replication.lastSyncAt = Math.round(lastSyncAt)
    if (failing !== null) replication.failing = { since: Math.round(failing.since), message: failing.message }
    return { replication }
  }

  function providerHealth(): { identityProvider?: Static<typeof ProviderHealth> } {
    const status = fastify.providerTokens?.status()
    if (status === undefined) return {}
    const identityProvider: Static<typeof ProviderHealth> = { keys: status.keys }
    if (status.loadedAt !== null) identityProvider.loadedAt = status.loadedAt
    if (status.failing !== null) identityProvider.failing = { ...status.failing }
    return { identityProvider }
  }

  fastify.get(
    '/health',
    {
      config: { tellsNoRecords: true },
      schema: {
        tags: ['health'],
        summary: 'liveness and database check (no token needed; the details with an admin token)',
        // No token needed; an admin token (optional) gets the details.
        security: [{}, { bearerAuth: [] }],
        // A refused query string is the one client error it can answer.
        response: { 200: Type.Union([PublicHealth, Health]), 400: Type.Ref(ErrorBody), 503: Unhealthy },
      },
    },
    async function health(request, reply) {
      // One URL, two answers: caches must not give an admin's answer to anyone else.
      reply.header('vary', 'authorization')
      const allowed = detailsAllowed(request)
      const detailed = allowed === true
      if (detailed) reply.header('cache-control', 'no-store')
      const trouble =
        unhealthy(request) ??
        (allowed === 'unchecked' ? { status: 'unavailable' as const, database: 'unreachable' } : null)
      if (trouble !== null) {
        // Without the details: the fault's word and stable code, never its text (paths, hosts).
        const { status, database, code } = trouble
        return reply.code(503).send(detailed ? trouble : { status, database, ...(code ? { code } : {}) })
      }
      const answer: Detailed = {
        status: 'ok',
        database: 'ok',
        ...hl7Health(fastify.hl7),
        ...backupHealth(),
        ...replicationHealth(),
        ...providerHealth(),
      }
      return detailed ? answer : statusOnly(answer)
    },
  )

  /** Why the service is unhealthy, with the details; null while it is healthy. */
  function unhealthy(request: FastifyRequest): Static<typeof Unhealthy> | null {
    try {
      probe.get()
    } catch (error) {
      request.log.error({ err: error }, 'health check failed')
      fastify.storage.report(error)
      return { status: 'unavailable', database: 'unreachable' }
    }
    const condition = fastify.storage.condition
    const syncSince = fastify.writes.syncRunningSince
    // Every answer but this one waits for that sync (plugins/db.ts): say so rather than "ok".
    if (condition === null && syncSince !== null && Date.now() - syncSince > SYNC_STALL_MS)
      return {
        status: 'unavailable',
        database: 'io',
        message: `the disk has not confirmed a write for ${Math.round((Date.now() - syncSince) / 1000)} s (the sync of the WAL file still waits); answers wait for it`,
        code: 'SYNC_STALLED',
        since: syncSince,
      }
    if (condition === null) return null
    return {
      status: 'unavailable',
      database: condition.fault,
      message: condition.message ?? FAULT_MESSAGES[condition.fault],
      code: condition.code,
      since: condition.since,
    }
  }
}

export default healthRoutes
