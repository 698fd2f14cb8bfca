import type { Database } from 'better-sqlite3'
import { endReadSnapshot } from './data-version.js'
import { trackDurableCommits } from './durable-commits.js'
import { withStatementJournalsInMemory } from './statement-journals.js'
import { type StorageState, storageError, storageFaultOf, syncFailedError } from './storage-faults.js'
import type { WalSync } from './wal-sync.js'

/**
 * Group commit. A durable commit waits for the disk (fsync, about a millisecond here), and
 * better-sqlite3 waits synchronously, so one commit per request caps every write at about a
 * thousand a second and stalls every other request meanwhile. The queue collects the writes that
 * arrive during one turn of the event loop and runs them in one transaction, committed with one
 * fsync. Every promise settles only after COMMIT returned, so an answered write is as durable as
 * before (synchronous=FULL).
 *
 * Each write stays atomic and fails alone. A write that throws before changing anything (a 404,
 * a 409 found by a check or by a constraint, which SQLite undoes by itself) just rejects. A write
 * that throws after changing something cannot be undone alone without a savepoint per write (which
 * doubles the cost of every write: SQLite copies each page it touches to a statement journal), so
 * the batch is rolled back and run again without it. Writes must therefore only change the
 * database (ward occupant events feed listeners that write in the same transaction, see
 * plugins/events.ts); a write may run more than once, and its result is the last run's.
 *
 * Another process holding the write lock (an admin's sqlite3 shell, the CLI) never blocks the event
 * loop: the server's connection has busy_timeout 0, so BEGIN IMMEDIATE fails at once, and the
 * batch is tried again on a timer, with backoff, the writes waiting in their order. A write that
 * has waited `busyTimeoutMs` for that lock is refused with DATABASE_BUSY; nothing of it was stored
 * (a wait for the queue's own running sync does not count).
 */
export interface WriteQueue {
  run<T>(write: () => T): Promise<T>
  /**
   * Runs `enqueue`, which must put one write in this queue synchronously (a repository call), so
   * that `followUp` runs in the same transaction right after that write succeeded, with its result
   * and whether it changed any row (an idempotency key's stored answer, see plugins/idempotency.ts).
   */
  withFollowUp<T>(followUp: FollowUp, enqueue: () => Promise<T>): Promise<T>
  /** How long a write may wait for another process's lock before it is refused. */
  readonly busyTimeoutMs: number
  /** Since when writes wait for another process's lock (null: they do not). */
  readonly waitingSince: number | null
  /**
   * With `walSync`: undefined when every commit so far is on disk, else a promise settled once
   * they are (rejected if the disk refused). Whatever the connection reads may come from a commit
   * that is not on disk yet, so every answer waits for this before it leaves (plugins/db.ts), and
   * the live feed before it reads the log (feed/hub.ts). Without `walSync`, always undefined.
   */
  whenDurable(): Promise<void> | undefined
  /**
   * Waits until no sync is running and the writes that waited for one are committed and synced,
   * or refused (another process's lock held past their busy timeout), before the connection
   * closes; at most `timeoutMs`.
   */
  settled(timeoutMs?: number): Promise<void>
  /** Since when the running sync of the WAL has waited for the disk (null: none runs); /health reads it. */
  readonly syncRunningSince: number | null
  /** Called after each commit that stored something (tests use it to crash at that point). */
  onCommit(listener: () => void): () => void
  /** Called when writes start waiting for another process's lock, get it, or are all refused. */
  onBusy(listener: (event: BusyEvent) => void): () => void
  /** Writes waiting for the next batch. */
  readonly depth: number
  /** Called once each batch that committed is durable: its writes, and the time from BEGIN to then. */
  onBatch(listener: (batch: CommitBatch) => void): () => void
}

export interface CommitBatch {
  writes: number
  seconds: number
}

export interface BusyEvent {
  state: 'waiting' | 'acquired' | 'gave-up'
  waitedMs: number
}

/** Runs right after its write, in the same transaction; `changed`: the write changed some row. */
export type FollowUp = (value: unknown, changed: boolean) => void

interface Job {
  write: () => unknown
  followUp: FollowUp | undefined
  resolve: (value: unknown) => void
  reject: (error: unknown) => void
  /** Since when it may wait for another process's lock: queued, or the end of the sync it waited for. */
  queuedAt: number
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown }

export interface WriteQueueOptions {
  /** Where a storage fault met by a write is reported, and cleared by the next commit. */
  storage: StorageState
  /** How long a write may wait for another process's lock before it is refused. */
  busyTimeoutMs: number
  /**
   * Makes commits durable off the event loop, for a connection in WAL mode with
   * `synchronous=NORMAL` (db/wal-sync.ts). Absent: COMMIT itself waits for the disk (FULL).
   */
  walSync?: WalSync
}

const FIRST_RETRY_MS = 2
// How long closing waits for a sync the disk has not answered.
const SETTLE_MS = 10_000
const LONGEST_RETRY_MS = 100

/**
 * The queue of a connection. Make one per connection (plugins/db.ts does, and decorates it as
 * `fastify.writes`), and give that one to every repository that writes, so all share the batches.
 */
export function createWriteQueue(db: Database, opts: WriteQueueOptions): WriteQueue {
  let pending: Job[] = []
  let scheduled = false
  let waitingSince: number | null = null
  let retryMs = FIRST_RETRY_MS
  let nextFollowUp: FollowUp | undefined
  const commitListeners = new Set<() => void>()
  const busyListeners = new Set<(event: BusyEvent) => void>()
  const batchListeners = new Set<(batch: CommitBatch) => void>()
  const { storage } = opts
  // Which commits are on disk (db/durable-commits.ts).
  // Writes that arrived while a sync ran wait for it to end (flush), then go in one batch.
  let waitingForSync = false
  const durability = trackDurableCommits(storage, opts.walSync, () => {
    if (!waitingForSync) return
    waitingForSync = false
    // Waiting for our own sync is not waiting for another process's lock: a slow disk must not use
    // up the busy timeout of writes that have not met any lock yet.
    const now = Date.now()
    for (const job of pending) job.queuedAt = now
    schedule(0)
  })
  const begin = db.prepare('BEGIN IMMEDIATE')
  const commit = db.prepare('COMMIT')
  const rollback = db.prepare('ROLLBACK')
  const totalChanges = db.prepare<[], number>('SELECT total_changes()').pluck()
  const inMemoryJournals = withStatementJournalsInMemory(db)

  /**
   * Runs the batch; `stored` says whether the committed transaction changed anything. It is counted
   * from the attempt that commits: a write that failed midway (a full disk on its third b-tree) did
   * change rows before its rollback, and counting those would take a refused batch for a recovery.
   */
  function runBatch(jobs: Job[]): { outcomes: Outcome[]; stored: boolean } {
    const outcomes: (Outcome | undefined)[] = []
    let todo = jobs.map((_, i) => i)
    for (;;) {
      endReadSnapshot(db) // reads of this turn must not hold the writes up
      begin.run()
      const changesAtBegin = totalChanges.get()
      let failedMidway = false
      for (const i of todo) {
        const job = jobs[i] as Job
        const before = totalChanges.get()
        try {
          const value = job.write()
          job.followUp?.(value, totalChanges.get() !== before)
          outcomes[i] = { ok: true, value }
        } catch (error) {
          outcomes[i] = { ok: false, error }
          // Changed something, or some error (disk full, I/O) made SQLite drop the transaction.
          if (totalChanges.get() !== before || !db.inTransaction) {
            failedMidway = true
            break
          }
        }
      }
      if (!failedMidway) {
        const stored = totalChanges.get() !== changesAtBegin
        commit.run()
        return { outcomes: outcomes as Outcome[], stored }
      }
      if (db.inTransaction) rollback.run()
      // Everything but the failed writes runs again, from the start, in a new transaction.
      todo = todo.filter((i) => outcomes[i]?.ok !== false)
      for (const i of todo) outcomes[i] = undefined
    }
  }

  // After the writes settled: a listener (the metrics) never holds up or breaks their answers.
  function tellBatch(writes: number, startedAt: bigint) {
    const seconds = Number(process.hrtime.bigint() - startedAt) / 1e9
    for (const listener of batchListeners) listener({ writes, seconds })
  }

  function settle(jobs: Job[], outcomes: Outcome[]): void {
    jobs.forEach((job, i) => {
      const outcome = outcomes[i] as Outcome
      if (outcome.ok) job.resolve(outcome.value)
      else {
        storage.report(outcome.error)
        job.reject(outcome.error)
      }
    })
  }

  function schedule(delayMs: number) {
    if (scheduled) return
    scheduled = true
    // setImmediate runs after the I/O of this turn: the requests that arrived together are all
    // parsed and queued by then.
    if (delayMs === 0) setImmediate(flush)
    else setTimeout(flush, delayMs)
  }

  /** BEGIN met another process's lock: refuse the writes that waited long enough, retry the rest. */
  function waitForLock(now: number) {
    if (waitingSince === null) {
      waitingSince = now
      tell('waiting', now)
    }
    const expired = pending.filter((job) => now - job.queuedAt >= queue.busyTimeoutMs)
    if (expired.length > 0) {
      pending = pending.filter((job) => now - job.queuedAt < queue.busyTimeoutMs)
      for (const job of expired) job.reject(storageError('busy'))
    }
    if (pending.length === 0) return endWait('gave-up', now)
    // Jitter keeps this process from retrying in step with another one doing the same.
    schedule(Math.ceil(retryMs * (0.5 + Math.random() / 2)))
    retryMs = Math.min(retryMs * 2, LONGEST_RETRY_MS)
  }

  function tell(state: BusyEvent['state'], now: number) {
    const event = { state, waitedMs: now - (waitingSince ?? now) }
    for (const listener of busyListeners) listener(event)
  }

  function endWait(state: 'acquired' | 'gave-up', now: number) {
    if (waitingSince === null) return
    tell(state, now)
    waitingSince = null
    retryMs = FIRST_RETRY_MS
  }

  function flush() {
    scheduled = false
    if (pending.length === 0) return
    if (!db.open) {
      // Closed while writes waited for a lock: they are refused, never left hanging.
      const refused = pending
      pending = []
      for (const job of refused) job.reject(new Error('the database was closed before this write could run'))
      return
    }
    // Damage found earlier, or a sync the disk failed: writing on would spread it (see StorageState).
    if (storage.condition?.fault === 'corrupt' || durability.failed) {
      const refused = pending
      pending = []
      for (const job of refused) job.reject(durability.failed ? syncFailedError() : storageError('corrupt'))
      return
    }
    // Their answers would wait for the running sync and the next one anyway: committing them once
    // the running one has ended, with whatever else arrives meanwhile, costs the same wait and
    // writes the pages they share (the tables' and indexes' last pages) once instead of per turn.
    if (durability.syncRunningSince !== null && waitingSince === null) {
      waitingForSync = true
      return
    }
    const jobs = pending
    pending = []
    let outcomes: Outcome[]
    let stored: boolean
    const startedAt = batchListeners.size > 0 ? process.hrtime.bigint() : 0n
    try {
      ;({ outcomes, stored } = inMemoryJournals(() => runBatch(jobs)))
    } catch (error) {
      // BEGIN or COMMIT failed: nothing of this batch is stored.
      if (db.open && db.inTransaction) rollback.run()
      if (storageFaultOf(error) === 'busy' && !db.inTransaction) {
        pending = [...jobs, ...pending]
        return waitForLock(Date.now())
      }
      storage.report(error)
      for (const job of jobs) job.reject(error)
      return
    }
    endWait('acquired', Date.now())
    if (stored) {
      durability.noteCommit()
      storage.recovered()
      for (const listener of commitListeners) listener()
    }
    if (pending.length > 0) schedule(0)
    const told = batchListeners.size > 0
    // A write's answer may show what earlier batches committed (a patch that changed nothing
    // answers the record as stored), so it waits for every commit so far, not only its own.
    if (durability.allDurable) {
      settle(jobs, outcomes)
      if (told) tellBatch(jobs.length, startedAt)
      return
    }
    durability.durableThroughNow().then(
      () => {
        settle(jobs, outcomes)
        if (told) tellBatch(jobs.length, startedAt)
      },
      (error: unknown) => {
        for (const job of jobs) job.reject(error)
      },
    )
  }

  const queue: WriteQueue = {
    busyTimeoutMs: opts.busyTimeoutMs,
    get waitingSince() {
      return waitingSince
    },
    run<T>(write: () => T): Promise<T> {
      const followUp = nextFollowUp
      nextFollowUp = undefined
      return new Promise<T>((resolve, reject) => {
        pending.push({ write, followUp, resolve: resolve as (value: unknown) => void, reject, queuedAt: Date.now() })
        // While waiting for a lock the retry timer is already set: new writes join that batch.
        if (waitingSince === null) schedule(0)
      })
    },
    withFollowUp<T>(followUp: FollowUp, enqueue: () => Promise<T>): Promise<T> {
      nextFollowUp = followUp
      try {
        return enqueue()
      } finally {
        nextFollowUp = undefined
      }
    },
    whenDurable() {
      return durability.allDurable && !durability.failed ? undefined : durability.durableThroughNow()
    },
    async settled(timeoutMs = SETTLE_MS) {
      const deadline = Date.now() + timeoutMs
      await durability.settled(timeoutMs)
      // Writes that waited for that sync commit now, not a turn later: the connection closes next.
      // Writes that meet another process's lock are retried by their timer until it is free or
      // their busy timeout refuses them.
      while (pending.length > 0 && db.open && Date.now() < deadline) {
        if (waitingSince === null) flush()
        else await new Promise((resolve) => setTimeout(resolve, FIRST_RETRY_MS))
        await durability.settled(Math.max(0, deadline - Date.now()))
      }
    },
    get syncRunningSince() {
      return durability.syncRunningSince
    },
    onCommit(listener) {
      commitListeners.add(listener)
      return () => commitListeners.delete(listener)
    },
    onBusy(listener) {
      busyListeners.add(listener)
      return () => busyListeners.delete(listener)
    },
    get depth() {
      return pending.length
    },
    onBatch(listener) {
      batchListeners.add(listener)
      return () => batchListeners.delete(listener)
    },
  }
  return queue
}
