import { type StorageState, syncFailedError } from './storage-faults.js'
import type { WalSync } from './wal-sync.js'

/**
 * Which of a connection's commits are on disk (db/write-queue.ts counts them, docs/ARCHITECTURE.md
 * "The path of one write"). With `walSync` (WAL mode, `synchronous=NORMAL`) a commit is on disk
 * once a sync of the WAL that started after it has returned: one sync at a time, each covering
 * every commit made before it started. Without it COMMIT itself waited for the disk.
 */
export interface DurableCommits {
  /** A commit that stored something was made. */
  noteCommit(): void
  /** Every commit so far is known to be on disk (false after a failed sync too, see `failed`). */
  readonly allDurable: boolean
  /** A sync the disk refused: never cleared (storage-faults.ts, SYNC_FAILED_MESSAGE). */
  readonly failed: boolean
  /** Settles once every commit made so far is on disk; rejected if the disk refused. */
  durableThroughNow(): Promise<void>
  /** Waits until no sync is running (before the connection closes), at most `timeoutMs`. */
  settled(timeoutMs: number): Promise<void>
  /** Since when the running sync has waited for the disk (null: none runs). */
  readonly syncRunningSince: number | null
}

interface DurableWaiter {
  upTo: number
  resolve: () => void
  reject: (error: unknown) => void
}

/**
 * `onSyncEnded`: called each time a sync has returned (or failed), after its waiters were told and
 * before the next sync is asked for (the write queue commits the writes that waited for it then).
 */
export function trackDurableCommits(
  storage: StorageState,
  walSync: WalSync | undefined,
  onSyncEnded: () => void = () => {},
): DurableCommits {
  // Commits that stored something, and how many of them are known to be on disk.
  let committed = 0
  let durable = 0
  let syncing: Promise<void> | null = null
  let syncFailed = false
  let syncStarted: number | null = null
  const waiters: DurableWaiter[] = []

  function requestSync(): void {
    if (!walSync || syncing !== null || durable === committed || syncFailed) return
    const upTo = committed
    syncStarted = Date.now()
    syncing = walSync.sync().then(
      () => synced(upTo, null),
      (error: unknown) => synced(upTo, error),
    )
  }

  function synced(upTo: number, error: unknown): void {
    syncing = null
    syncStarted = null
    if (error !== null) {
      // Every waiter, and everything after, is refused until a restart, and `durable` stays where
      // the disk last confirmed it.
      syncFailed = true
      storage.latch(error)
      for (const waiter of waiters.splice(0)) waiter.reject(syncFailedError())
      onSyncEnded()
      return
    }
    durable = upTo
    for (let i = waiters.length - 1; i >= 0; i--) {
      const waiter = waiters[i] as DurableWaiter
      if (waiter.upTo > upTo) continue
      waiters.splice(i, 1)
      waiter.resolve()
    }
    onSyncEnded()
    requestSync()
  }

  return {
    noteCommit() {
      committed += 1
      // Without walSync, COMMIT returned only once the disk had it.
      if (!walSync) durable = committed
    },
    get allDurable() {
      return durable === committed
    },
    get failed() {
      return syncFailed
    },
    durableThroughNow() {
      if (syncFailed) return Promise.reject(syncFailedError())
      const upTo = committed
      return new Promise((resolve, reject) => {
        waiters.push({ upTo, resolve, reject })
        requestSync()
      })
    },
    async settled(timeoutMs) {
      // A disk that stopped answering must not keep the service from stopping.
      const deadline = Date.now() + timeoutMs
      while (syncing !== null && Date.now() < deadline)
        await Promise.race([syncing, new Promise((resolve) => setTimeout(resolve, deadline - Date.now()).unref())])
    },
    get syncRunningSince() {
      return syncStarted
    },
  }
}
