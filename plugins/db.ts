import type { Database } from 'better-sqlite3'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { applyBedPolicy, type BedPolicy } from '../db/bed-policy.js'
import { describeCopy, openDatabase } from '../db/connection.js'
import { type AuditLog, createAuditLog } from '../db/repositories/audit.js'
import { createBedRepository } from '../db/repositories/beds.js'
import { createFeedLog } from '../db/repositories/feed.js'
import { createFormTemplateRepository } from '../db/repositories/form-templates.js'
import { createIdempotencyKeys } from '../db/repositories/idempotency-keys.js'
import { createNotificationRepository } from '../db/repositories/notifications.js'
import { createReadLog } from '../db/repositories/read-log.js'
import { createTokenRepository, type TokenRepository } from '../db/repositories/tokens.js'
import { createWardOccupantRepository } from '../db/repositories/ward-occupants.js'
import { FAULT_MESSAGES, StorageState } from '../db/storage-faults.js'
import { withTokenCache } from '../db/token-cache.js'
import { createWriteQueue, type WriteQueue } from '../db/write-queue.js'

declare module 'fastify' {
  interface FastifyInstance {
    db: Database
    /** The connection's one write queue (group commit); every repository that writes uses it. */
    writes: WriteQueue
    /** Every repository, built once over the one connection. */
    repos: Repositories
    tokens: TokenRepository
    audit: AuditLog
    /** Whether the database can take writes (a full disk, an I/O error ...), for /health. */
    storage: StorageState
  }
}

export interface DbPluginOptions {
  path: string
  bedPolicy: BedPolicy
  /** How long a write waits for another process's lock before DATABASE_BUSY. */
  busyTimeoutMs: number
  /** Memory for notification pages asked again before anything changed (0: none). */
  pageCacheBytes: number
  /** SQLite's page cache of this connection (DATABASE_CACHE_BYTES). */
  cacheBytes: number
}

export type Repositories = ReturnType<typeof createRepositories>

/**
 * Every repository over one connection, sharing its write queue and its feed log, so a change,
 * its audit entry and its feed event commit in one transaction and the feed hears of the append.
 */
function createRepositories(
  db: Database,
  writes: WriteQueue,
  events: FastifyInstance['events'],
  opts: DbPluginOptions,
) {
  const audit = createAuditLog(db)
  const feed = createFeedLog(db)
  const tokens = withTokenCache(db, createTokenRepository(db))
  return {
    audit,
    feed,
    tokens,
    wardOccupants: createWardOccupantRepository(db, { audit, feed, events, writes }),
    beds: createBedRepository(db),
    formTemplates: createFormTemplateRepository(db, { audit, feed, writes }),
    notifications: createNotificationRepository(db, { feed, writes, pageCacheBytes: opts.pageCacheBytes }),
    readLog: createReadLog(db),
    idempotencyKeys: createIdempotencyKeys(db),
  }
}

// Litestream's checkpoints hold the write lock for milliseconds every few seconds: a wait is worth
// a warning only when it lasts.
const LOCK_WARN_AFTER_MS = 1000

/** Once per wait that lasts: writes wait for another process's lock; and when they go on, or were refused. */
function logLockWaits(fastify: FastifyInstance, queue: WriteQueue, file: string, busyTimeoutMs: number): void {
  let warning: NodeJS.Timeout | null = null
  let warned = false
  queue.onBusy(function logLock({ state, waitedMs }) {
    if (state === 'waiting') {
      warning = setTimeout(() => {
        warned = true
        fastify.log.warn(
          { file },
          `${file} is locked by another process: writes wait (at most ${busyTimeoutMs} ms each), reads go on`,
        )
      }, LOCK_WARN_AFTER_MS)
      warning.unref()
      return
    }
    if (warning !== null) clearTimeout(warning)
    if (state === 'acquired') {
      if (warned) fastify.log.info({ file, waitedMs }, `${file}: the lock was released, writes go on`)
    } else
      fastify.log.warn(
        { file, waitedMs },
        `${file} stayed locked by another process: waiting writes were answered 503 DATABASE_BUSY`,
      )
    warned = false
  })
}

/** The one SQLite connection every plugin shares; closed when the app closes. */
export default fp<DbPluginOptions>(
  async function dbPlugin(fastify, opts) {
    // Migrations at start may wait (blocking) for another process's lock; serving never does.
    const db = openDatabase(opts.path, opts.busyTimeoutMs, {
      onPreMigrationCopy(copy, from, to) {
        fastify.log.info({ file: copy.file, from, to, kept: copy.kept }, describeCopy(copy, from, to))
      },
    })
    // 32 MiB of page cache by default instead of SQLite's 2 MiB: the indexes a busy ward reads stay
    // in memory rather than being read again (a system call each) on every request. Negative: KiB.
    db.pragma(`cache_size = -${Math.floor(opts.cacheBytes / 1024)}`)
    try {
      applyBedPolicy(db, opts.bedPolicy)
    } catch (error) {
      db.close()
      throw error
    }
    db.pragma('busy_timeout = 0')
    const storage = new StorageState()
    const queue = createWriteQueue(db, { storage, busyTimeoutMs: opts.busyTimeoutMs })
    const file = opts.path
    // Once per episode: when writes start failing, and when they work again (not once per request).
    storage.onChange(function logStorage({ condition, error }) {
      if (condition)
        fastify.log.error(
          { err: error, file, fault: condition.fault, code: condition.code },
          `${file}: ${FAULT_MESSAGES[condition.fault]}`,
        )
      else fastify.log.info({ file }, `${file}: the database takes writes again`)
    })
    logLockWaits(fastify, queue, file, opts.busyTimeoutMs)
    const repos = createRepositories(db, queue, fastify.events, opts)
    fastify.decorate('storage', storage)
    fastify.decorate('db', db)
    fastify.decorate('writes', queue)
    fastify.decorate('repos', repos)
    fastify.decorate('tokens', repos.tokens)
    fastify.decorate('audit', repos.audit)
    fastify.addHook('onClose', function closeDatabase() {
      db.close()
    })
  },
  { name: 'db', fastify: '5.x', dependencies: ['events'] },
)
