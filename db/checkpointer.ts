/**
 * Checkpoints off the event loop. SQLite copies the WAL back into the database file every 1 000
 * pages by default, inside the COMMIT that crossed the line: two fsyncs and the copy, with the
 * whole server waiting (under a stream of creates, more than half of what COMMIT cost them;
 * docs/PERFORMANCE.md). Here a worker thread with its own connection does it
 * (checkpoint-worker.ts), a few times a second while commits come, and the server's connection
 * leaves checkpoints to it (wal_autocheckpoint = 0) while it runs.
 *
 * SQLite allows a checkpoint by any connection: it syncs the WAL before copying and the database
 * file once every frame is copied, and a writer starts the WAL over only after that, so nothing
 * committed depends on which connection checkpoints. But the WAL starts over only when a write
 * begins with every frame copied, and writes that never pause leave a few frames after each
 * checkpoint of another connection: past `walLimitFrames` the worker pauses and the server's
 * connection copies those last frames itself right after a commit, so that its next write starts
 * the WAL over.
 *
 * The worker starts with the first commit and
 * ends ten seconds after the last (its memory goes back, as the print workers' does); without it,
 * and should it fail, the server's connection checkpoints itself, as SQLite does by default. With a
 * replica (REPLICA_URL) there is no worker: Litestream checkpoints, and the server only while
 * Litestream is down (plugins/replication.ts).
 */

import type { Worker } from 'node:worker_threads'
import type { Database } from 'better-sqlite3'
import { startWorker } from '../lib/worker-boot.js'
import {
  type CheckpointerMessage,
  type CheckpointRow,
  type CheckpointWorkerData,
  SIGNAL,
} from './checkpoint-protocol.js'
import { endReadSnapshot, inWriteTransaction } from './data-version.js'

export interface CheckpointDone {
  /** Frames in the WAL, and how many of them are back in the database file. */
  frames: number
  copied: number
}

export interface Checkpointer {
  /** After each commit that stored something: starts the worker, or has it checkpoint soon. */
  noteCommit(): void
  /** Each checkpoint the worker made. */
  onCheckpoint(listener: (done: CheckpointDone) => void): () => void
  /** Whether the worker is up and the server's connection leaves checkpoints to it. */
  readonly running: boolean
  close(): Promise<void>
}

interface Log {
  error(fields: object, message: string): void
}

export type CheckpointerOptions = { log: Log; walLimitFrames?: number } & Partial<
  Omit<CheckpointWorkerData, 'path' | 'signal'>
>

/** SQLite's own default, which the server's connection keeps while no worker runs. */
const AUTOCHECKPOINT_PAGES = 1000
// Ten seconds: a busy ward keeps it, a quiet one gets its memory (10–15 MB) back soon after a
// burst of writes; starting it again costs a few tens of milliseconds on its own thread.
const DEFAULTS = { intervalMs: 200, idleMs: 10_000 }
// 40 MB of WAL at 4 KiB pages: reached only by writes that never pause for a checkpoint to catch up.
const WAL_LIMIT_FRAMES = 10_000
const STOP_TIMEOUT_MS = 5000
// A checkpoint allocates next to nothing on the JavaScript heap.
const WORKER_LIMITS = { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 1, stackSizeMb: 1 }

/** For a connection to a database in a file of its own, in WAL mode. */
export function createCheckpointer(db: Database, opts: CheckpointerOptions): Checkpointer {
  const signal = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT * 2)
  const flags = new Int32Array(signal)
  const { log, walLimitFrames = WAL_LIMIT_FRAMES, ...settings } = opts
  const data: CheckpointWorkerData = { ...DEFAULTS, ...settings, path: db.name, signal }
  const listeners = new Set<(done: CheckpointDone) => void>()
  let worker: Worker | null = null
  let exited: Promise<void> = Promise.resolve()
  let running = false
  let closing = false

  function setAutocheckpoint(): void {
    if (db.open) db.pragma(`wal_autocheckpoint = ${running ? 0 : AUTOCHECKPOINT_PAGES}`)
  }

  // Past the limit: the worker pauses, and after each commit the server's connection copies the
  // frames left (a few: the worker copied the rest) until it has copied every one.
  let catchingUp = false

  function startCatchingUp(): void {
    catchingUp = true
    Atomics.store(flags, SIGNAL.serverCatchingUp, 1)
  }

  function catchUp(): void {
    if (!db.open || inWriteTransaction(db)) return
    endReadSnapshot(db) // a checkpoint cannot run inside a transaction, a read one included
    let row: CheckpointRow | undefined
    try {
      // Busy while the worker's last checkpoint still runs: tried again after the next commit.
      row = (db.pragma('wal_checkpoint(PASSIVE)') as CheckpointRow[])[0]
    } catch (error) {
      // Runs after a commit, inside the write queue: a failure here must not become the writes'.
      log.error({ err: error, file: db.name }, `${db.name}: a checkpoint failed`)
      return
    }
    if (row === undefined || row.busy !== 0 || row.checkpointed < row.log) return
    catchingUp = false
    Atomics.store(flags, SIGNAL.serverCatchingUp, 0)
  }

  // A worker that could not be started, that ended unexpectedly or whose checkpoints fail is not
  // started again (at every commit it would fail again): the server checkpoints itself until it
  // restarts, as SQLite does by default, and the log says so once.
  let unavailable = false

  function start(): void {
    let started: Worker
    try {
      started = startWorker(import.meta.url, 'checkpoint-worker', WORKER_LIMITS, data)
    } catch (error) {
      unavailable = true
      log.error({ err: error, file: db.name }, `${db.name}: no checkpoint worker; the server checkpoints itself`)
      return
    }
    started.unref()
    worker = started
    let endedIdle = false
    exited = new Promise((resolve) => started.once('exit', () => resolve()))
    started.on('message', (message: CheckpointerMessage) => {
      if (message.type === 'ready') {
        running = true
        setAutocheckpoint()
      } else if (message.type === 'checkpoint') {
        if (message.frames >= walLimitFrames) startCatchingUp()
        for (const listener of listeners) listener(message)
      } else if (message.type === 'idle') {
        endedIdle = true
      } else {
        // Its checkpoints fail: nothing else would copy the WAL back while it runs.
        unavailable = true
        log.error(
          { file: db.name, code: message.code },
          `${db.name}: a checkpoint failed: ${message.message}; the server checkpoints itself until it restarts`,
        )
        started.postMessage({ type: 'stop' })
      }
    })
    started.on('error', (error) => {
      log.error({ err: error, file: db.name }, `${db.name}: the checkpoint worker failed`)
    })
    started.on('exit', () => {
      worker = null
      running = false
      setAutocheckpoint()
      if (closing || endedIdle || unavailable) return
      unavailable = true
      log.error(
        { file: db.name },
        `${db.name}: the checkpoint worker ended; the server checkpoints itself until it restarts`,
      )
    })
  }

  return {
    noteCommit() {
      Atomics.add(flags, SIGNAL.commits, 1)
      if (catchingUp) catchUp()
      if (worker === null && !closing && !unavailable) start()
    },
    onCheckpoint(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    get running() {
      return running
    },
    async close() {
      closing = true
      const current = worker
      if (current === null) return
      current.postMessage({ type: 'stop' })
      const timer = setTimeout(() => void current.terminate(), STOP_TIMEOUT_MS)
      await exited
      clearTimeout(timer)
    },
  }
}
