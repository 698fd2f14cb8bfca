/** What the server and its checkpoint worker share (db/checkpointer.ts, db/checkpoint-worker.ts). */

/** Slots of the shared Int32Array: read and written with Atomics, no message per commit. */
export const SIGNAL = {
  /** Commits that stored something, counted by the server. */
  commits: 0,
  /** 1 while the server's connection copies the last frames itself (db/checkpointer.ts, walLimitFrames). */
  serverCatchingUp: 1,
} as const

export interface CheckpointWorkerData {
  path: string
  signal: SharedArrayBuffer
  intervalMs: number
  /** With every frame copied and no commit for this long, the worker ends (its memory goes back). */
  idleMs: number
}

export type CheckpointerMessage =
  | { type: 'ready' }
  /** `frames` in the WAL, `copied` of them back in the database. */
  | { type: 'checkpoint'; frames: number; copied: number }
  | { type: 'error'; message: string; code: string | undefined }
  /** Ends on its own: nothing to copy for `idleMs`. */
  | { type: 'idle' }

/** What `PRAGMA wal_checkpoint` answers: frames in the WAL, and how many are back in the database. */
export interface CheckpointRow {
  busy: number
  log: number
  checkpointed: number
}
