import type { Database } from 'better-sqlite3'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { applyBedPolicy, type BedPolicy } from '../db/bed-policy.js'
import { type Checkpointer, createCheckpointer } from '../db/checkpointer.js'
import { describeCopy, openDatabase } from '../db/connection.js'
import { dataVersionOf, endReadSnapshot, onStrayWrite, releaseDataVersion } from '../db/data-version.js'
import { type AuditLog, createAuditLog } from '../db/repositories/audit.js'
import { createBedStateRepository } from '../db/repositories/bed-states.js'
import { createBedRepository } from '../db/repositories/beds.js'
import { createBlockedAccounts } from '../db/repositories/blocked-accounts.js'
import { createFeedLog } from '../db/repositories/feed.js'
import { createFhirReads } from '../db/repositories/fhir-reads.js'
import { createFormTemplateRepository } from '../db/repositories/form-templates.js'
import { createIdempotencyKeys } from '../db/repositories/idempotency-keys.js'
import { createNotificationRepository } from '../db/repositories/notifications.js'
import { createProviderAdmins } from '../db/repositories/provider-admins.js'
import { createQuestionnaireReads } from '../db/repositories/questionnaires.js'
import { createReadLog } from '../db/repositories/read-log.js'
import { createTokenRepository, type TokenRepository } from '../db/repositories/tokens.js'
import { createWardOccupantRepository } from '../db/repositories/ward-occupants.js'
import { FAULT_MESSAGES, StorageState } from '../db/storage-faults.js'
import { withTokenCache } from '../db/token-cache.js'
import { openWalSync, type WalSync } from '../db/wal-sync.js'
import { createWriteQueue, type WriteQueue } from '../db/write-queue.js'
import { createTurnBatch } from '../http/turn-batch.js'

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
    /** The worker that checkpoints the WAL (null: an in-memory database, the connection's own). */
    checkpoints: Checkpointer | null
  }
  interface FastifyContextConfig {
    /**
     * The answer tells of no record (/health): it need not wait for a commit's sync, so a disk
     * that stopped answering is still reported while other answers wait for it.
     */
    tellsNoRecords?: boolean
  }
}

export interface DbPluginOptions {
  path: string
  bedPolicy: BedPolicy
  /** How long a write waits for another process's lock before DATABASE_BUSY. */
  busyTimeoutMs: number
  /** Memory for notification pages asked again before anything changed (0: none). */
  pageCacheBytes: number
  /** The same for ward occupant lists (WARD_OCCUPANT_PAGE_CACHE_BYTES; absent: none). */
  occupantPageCacheBytes?: number
  /** Where a commit waits for the disk (DURABLE_SYNC): a worker thread, or COMMIT itself. */
  durableSync?: 'background' | 'commit'
  /** Whether a worker thread checkpoints (db/checkpointer.ts); absent: yes, for a WAL file. */
  checkpointWorker?: boolean
  /** SQLite's page cache of this connection (DATABASE_CACHE_BYTES). */
  cacheBytes: number
  /** BED_EXPECTED_HOURS: how long a pending admission or transfer keeps its bed expected (0: until cleared). */
  bedExpectedHours?: number
}

/** A database in a file of its own (not in memory, not a URI), in WAL mode. */
function inWalFile(db: Database): boolean {
  const file = db.name
  if (db.memory || file === '' || file.startsWith('file:')) return false
  return db.pragma('journal_mode', { simple: true }) === 'wal'
}

/**
 * The fsync of each commit moved off the event loop (db/wal-sync.ts), for a database in a file of
 * its own in WAL mode; otherwise (in memory, a URI), or when its WAL file cannot be opened and
 * proven to be the one SQLite writes, COMMIT keeps waiting for the disk itself.
 */
function backgroundSync(db: Database, log: FastifyInstance['log']): WalSync | undefined {
  const file = db.name
  if (!inWalFile(db)) return undefined
  let walSync: WalSync
  try {
    walSync = openWalSync(file)
  } catch (error) {
    log.warn({ err: error, file }, `${file}: commits wait for the disk inside COMMIT (DURABLE_SYNC=commit)`)
    return undefined
  }
  db.pragma('synchronous = NORMAL')
  return walSync
}

/**
 * Token changes commit on their own, outside the write queue (the first-start token, scripts
 * through index.ts): with synchronous=FULL for that commit, so they are on disk when they return,
 * whatever the connection's setting.
 */
function committedDurably(db: Database, tokens: TokenRepository): TokenRepository {
  function durably<T>(change: () => T): T {
    endReadSnapshot(db) // its own commit, now, not the snapshot's at the end of the turn
    if (db.pragma('synchronous', { simple: true }) === 2) return change()
    db.pragma('synchronous = FULL')
    try {
      return change()
    } finally {
      db.pragma('synchronous = NORMAL')
    }
  }
  return {
    ...tokens,
    create: (...args) => durably(() => tokens.create(...args)),
    revoke: (...args) => durably(() => tokens.revoke(...args)),
  }
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
  const tokens = committedDurably(db, withTokenCache(db, createTokenRepository(db)))
  const notifications = createNotificationRepository(db, { feed, writes, pageCacheBytes: opts.pageCacheBytes })
  const expectedHours = opts.bedExpectedHours ?? 24
  const bedStates = createBedStateRepository(db, {
    audit,
    feed,
    writes,
    expectedHours,
    notify: (notification) => notifications.create(notification),
  })
  return {
    audit,
    feed,
    tokens,
    wardOccupants: createWardOccupantRepository(db, {
      audit,
      feed,
      events,
      writes,
      pageCacheBytes: opts.occupantPageCacheBytes,
      admissible: bedStates.assertAdmissible,
    }),
    beds: createBedRepository(db, expectedHours),
    fhirReads: createFhirReads(db, expectedHours),
    bedStates,
    formTemplates: createFormTemplateRepository(db, { audit, feed, writes }),
    questionnaires: createQuestionnaireReads(db),
    notifications,
    readLog: createReadLog(db),
    blockedAccounts: createBlockedAccounts(db),
    providerAdmins: createProviderAdmins(db, writes),
    idempotencyKeys: createIdempotencyKeys(db),
  }
}

// Litestream's checkpoints hold the write lock for milliseconds every few seconds: a wait is worth
// a warning only when it lasts.
const LOCK_WARN_AFTER_MS = 1000
// The most requests of one turn that go on after one look at the file (http/turn-batch.ts): a
// burst of pipelined requests holds the turn's first answers back by at most this many routes.
const TURN_BATCH_SIZE = 64

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
    // 16 MiB of page cache by default instead of SQLite's 2 MiB: the indexes a busy ward reads stay
    // in memory rather than being read again (a system call each) on every request. 32 MiB read no
    // faster at a million occupants and held 16 MB more (docs/DECISIONS.md). Negative: KiB.
    db.pragma(`cache_size = -${Math.floor(opts.cacheBytes / 1024)}`)
    try {
      applyBedPolicy(db, opts.bedPolicy)
    } catch (error) {
      db.close()
      throw error
    }
    db.pragma('busy_timeout = 0')
    const storage = new StorageState()
    const walSync = (opts.durableSync ?? 'background') === 'background' ? backgroundSync(db, fastify.log) : undefined
    const queue = createWriteQueue(db, { storage, busyTimeoutMs: opts.busyTimeoutMs, walSync })
    const file = opts.path
    // Once per episode: when writes start failing, and when they work again (not once per request).
    storage.onChange(function logStorage({ condition, error }) {
      if (condition)
        fastify.log.error(
          { err: error, file, fault: condition.fault, code: condition.code },
          `${file}: ${condition.message ?? FAULT_MESSAGES[condition.fault]}`,
        )
      else fastify.log.info({ file }, `${file}: the database takes writes again`)
    })
    logLockWaits(fastify, queue, file, opts.busyTimeoutMs)
    const repos = createRepositories(db, queue, fastify.events, opts)
    const checkpoints =
      opts.checkpointWorker !== false && inWalFile(db) ? createCheckpointer(db, { log: fastify.log }) : null
    if (checkpoints) queue.onCommit(() => checkpoints.noteCommit())
    fastify.decorate('checkpoints', checkpoints)
    fastify.decorate('storage', storage)
    fastify.decorate('db', db)
    fastify.decorate('writes', queue)
    fastify.decorate('repos', repos)
    fastify.decorate('tokens', repos.tokens)
    fastify.decorate('audit', repos.audit)
    // Every request reads in a snapshot that is the file as the request arrives (db/data-version.ts):
    // asked first, before any other hook reads (a stream's ticket, a sign-in), not only by the
    // token check.
    const dataVersion = dataVersionOf(db)
    onStrayWrite(db, () =>
      fastify.log.error(
        { file },
        `${file}: a write ran inside a read transaction; it is committed, but its answer may have left before its sync`,
      ),
    )
    // The requests read from the sockets in one turn go on together once the turn's I/O is done,
    // after one look at the file (http/turn-batch.ts): a look per request cost a system call each
    // (a `pread` of the WAL-index header, a sixth of a read by id). Their token checks follow in
    // the same synchronous run and use that look (data-version.ts remembers it until the next
    // microtask); the read snapshot it opened ends right after them, in the same turn.
    const hold = createTurnBatch({
      look() {
        try {
          dataVersion()
        } catch {
          // An unreadable database: the route's own reads report it (/health answers 503), and the
          // token check asks again.
        }
      },
      end: () => endReadSnapshot(db),
      batchSize: TURN_BATCH_SIZE,
    })
    fastify.addHook('onRequest', function readsFromNow(_request, reply, done) {
      hold({ goOn: done, fail: (error) => reply.send(error) })
    })
    // Whatever the connection read may come from a commit whose sync is still running: no answer
    // leaves before it is on disk (only answers sent between a commit and its sync ever wait).
    fastify.addHook('onSend', function answerWhenDurable(request, _reply, payload, done) {
      if (request.routeOptions.config.tellsNoRecords) return done(null, payload)
      const durable = queue.whenDurable()
      if (durable === undefined) return done(null, payload)
      durable.then(() => done(null, payload), done)
    })
    fastify.addHook('onClose', async function closeDatabase() {
      await queue.settled()
      await checkpoints?.close()
      db.close()
      releaseDataVersion(db)
      walSync?.close()
    })
  },
  { name: 'db', fastify: '5.x', dependencies: ['events'] },
)
