import type { Database } from 'better-sqlite3'
import fp from 'fastify-plugin'
import { applyBedPolicy, type BedPolicy } from '../db/bed-policy.js'
import { openDatabase } from '../db/connection.js'
import { type AuditLog, createAuditLog } from '../db/repositories/audit.js'
import { createTokenRepository, type TokenRepository } from '../db/repositories/tokens.js'
import { FAULT_MESSAGES, type StorageState, storageState } from '../db/storage-faults.js'
import { withTokenCache } from '../db/token-cache.js'
import { writeQueue } from '../db/write-queue.js'

declare module 'fastify' {
  interface FastifyInstance {
    db: Database
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
}

/** The one SQLite connection every plugin shares; closed when the app closes. */
export default fp<DbPluginOptions>(
  async function dbPlugin(fastify, opts) {
    // Migrations at start may wait (blocking) for another process's lock; serving never does.
    const db = openDatabase(opts.path, opts.busyTimeoutMs)
    // 32 MiB of page cache instead of SQLite's 2 MiB: the indexes a busy ward reads stay in memory
    // rather than being read again (a system call each) on every request.
    db.pragma('cache_size = -32768')
    try {
      applyBedPolicy(db, opts.bedPolicy)
    } catch (error) {
      db.close()
      throw error
    }
    db.pragma('busy_timeout = 0')
    const queue = writeQueue(db)
    queue.busyTimeoutMs = opts.busyTimeoutMs
    const storage = storageState(db)
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
    queue.onBusy(function logLock({ state, waitedMs }) {
      if (state === 'waiting')
        fastify.log.warn(
          { file },
          `${file} is locked by another process: writes wait (at most ${opts.busyTimeoutMs} ms each), reads go on`,
        )
      else if (state === 'acquired')
        fastify.log.info({ file, waitedMs }, `${file}: the lock was released, writes go on`)
      else
        fastify.log.warn(
          { file, waitedMs },
          `${file} stayed locked by another process: waiting writes were answered 503 DATABASE_BUSY`,
        )
    })
    fastify.decorate('storage', storage)
    fastify.decorate('db', db)
    fastify.decorate('tokens', withTokenCache(db, createTokenRepository(db)))
    fastify.decorate('audit', createAuditLog(db))
    fastify.addHook('onClose', function closeDatabase() {
      db.close()
    })
  },
  { name: 'db', fastify: '5.x' },
)
