/**
 * Entry of the checkpoint worker thread (db/checkpointer.ts): its own connection to the database
 * file copies the WAL's frames back into the database, so the server's connection never does it
 * inside a COMMIT on the event loop. Nothing here writes a row.
 */

import { parentPort, workerData } from 'node:worker_threads'
import BetterSqlite3 from 'better-sqlite3'
import {
  type CheckpointerMessage,
  type CheckpointRow,
  type CheckpointWorkerData,
  SIGNAL,
} from './checkpoint-protocol.js'
import { sqliteOptions } from './connection-options.js'

const { path, signal, intervalMs, idleMs } = (workerData as { data: CheckpointWorkerData }).data
const flags = new Int32Array(signal)
const db = new BetterSqlite3(path, sqliteOptions({ fileMustExist: true }))
// A checkpoint syncs the WAL before it copies and the database file once it has copied every
// frame, as SQLite's own checkpoints do; only then may a writer start the WAL over.
db.pragma('synchronous = FULL')
// It reads frames and writes pages; it needs no cache of its own.
db.pragma('cache_size = -256')
const passive = db.prepare<[], CheckpointRow>('PRAGMA wal_checkpoint(PASSIVE)')

let seenCommits = Atomics.load(flags, SIGNAL.commits)
// Frames may be left when a write landed while the last checkpoint ran: go on without a new commit.
let framesLeft = true
let lastError: string | null = null
let lastCommitSeenAt = Date.now()

function post(message: CheckpointerMessage): void {
  parentPort?.postMessage(message)
}

function stop(): void {
  clearInterval(timer)
  db.close()
  parentPort?.close()
}

function checkpoint(): void {
  const commits = Atomics.load(flags, SIGNAL.commits)
  // While the server's connection catches up, this worker leaves the WAL to it.
  const serverCatchingUp = Atomics.load(flags, SIGNAL.serverCatchingUp) === 1
  // Commits while the server catches up are commits all the same: not a reason to end idle.
  if (serverCatchingUp && commits !== seenCommits) lastCommitSeenAt = Date.now()
  if (serverCatchingUp || (commits === seenCommits && !framesLeft)) {
    if (Date.now() - lastCommitSeenAt < idleMs) return
    post({ type: 'idle' })
    stop()
    return
  }
  if (commits !== seenCommits) lastCommitSeenAt = Date.now()
  seenCommits = commits
  try {
    // Never waits for the server's writes: it copies what is there, and the server's next write
    // starts the WAL over once every frame is back.
    const row = passive.get() as CheckpointRow
    framesLeft = row.busy !== 0 || row.checkpointed < row.log
    lastError = null
    post({ type: 'checkpoint', frames: row.log, copied: row.checkpointed })
  } catch (error) {
    framesLeft = true
    const message = error instanceof Error ? error.message : String(error)
    const code = (error as { code?: unknown }).code
    // Once per kind of failure, not every interval.
    if (message !== lastError) post({ type: 'error', message, code: typeof code === 'string' ? code : undefined })
    lastError = message
  }
}

const timer = setInterval(checkpoint, intervalMs)
parentPort?.on('message', (message: { type: string }) => {
  if (message.type === 'stop') stop()
})
post({ type: 'ready' })
