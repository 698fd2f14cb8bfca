import type { Database, Statement } from 'better-sqlite3'
import { type CommitWatch, watchCommits } from './wal-index-header.js'

interface ConnectionState {
  read: () => number
  commits: CommitWatch | null
  /** A read transaction of ours is open (see below). */
  snapshot: boolean
  endSnapshot: () => void
}

const states = new WeakMap<Database, ConnectionState>()

/**
 * `PRAGMA data_version` of a connection (it changes when another connection commits: the CLI
 * creating or revoking a token, blocking an account), read at most once per synchronous run: a
 * request's token check and its blocked-account check ask one after the other, and nothing can
 * commit in between that the request could have seen (its bytes were read before either asked).
 * The value is forgotten at the next microtask checkpoint, so every later request asks afresh.
 *
 * **The read snapshot.** Each statement outside a transaction takes and gives back SQLite's read
 * locks (some five system calls, most of a read by id's cost), so the first request of an
 * event-loop turn opens a read transaction (`BEGIN`, then the pragma), and the requests of that
 * turn read in it; it ends when the turn does (`setImmediate`), before any write of this
 * connection (`endReadSnapshot`: the write queue asks before its `BEGIN IMMEDIATE`), or as soon as
 * another request finds that some connection committed since it began.
 *
 * That is told by the WAL-index header (db/wal-index-header.ts, one `pread`), saved *before* the
 * snapshot's pragma: while it is unchanged no connection has committed since, and the snapshot
 * holds exactly what the file holds, so a request may read in it and its data_version is the
 * file's. A commit that lands between the save and the pragma changes the header, and the next
 * request starts a new snapshot. A database in memory has no other connection, so its snapshot is
 * always the file; a file without a header to read (not in WAL mode) gets no snapshot, and every
 * request reads the pragma. Inside someone else's transaction the pragma tells that transaction's
 * snapshot: there it is read and never remembered.
 */
export function dataVersionOf(db: Database): () => number {
  return stateOf(db).read
}

/** Ends the read snapshot of `db`, if one is open: before a write, which must not run inside it. */
export function endReadSnapshot(db: Database): void {
  states.get(db)?.endSnapshot()
}

/** Whether `db` is inside a transaction that may write (one of its own, not the read snapshot). */
export function inWriteTransaction(db: Database): boolean {
  return db.inTransaction && states.get(db)?.snapshot !== true
}

/** Gives back what `dataVersionOf` holds open for `db`; call after `db.close()`. */
export function releaseDataVersion(db: Database): void {
  const state = states.get(db)
  if (!state) return
  state.snapshot = false
  state.commits?.release()
  states.delete(db)
}

function stateOf(db: Database): ConnectionState {
  const known = states.get(db)
  if (known) return known
  const pragma = db.prepare<[], number>('PRAGMA data_version').pluck()
  const begin = db.prepare('BEGIN')
  const commit = db.prepare('COMMIT')
  const rollback = db.prepare('ROLLBACK')
  const commits = watchCommits(db)
  // Only where a commit of another connection can be told (or none can happen) may reads share one.
  const snapshots = commits !== null || db.memory
  let current: number | undefined
  let last: number | undefined
  const forget = () => {
    current = undefined
  }

  // While the snapshot is open the connection refuses to write: a write that did not end it first
  // (every write must) fails at once rather than being committed at the turn's end, unsynced. A
  // flag pragma takes effect when compiled, so each change is compiled anew.
  const readOnly = (on: boolean) => {
    try {
      db.exec(`PRAGMA query_only = ${on ? 1 : 0}`)
    } catch {
      // a closed connection: nothing to write to
    }
  }

  const state: ConnectionState = {
    read,
    commits,
    snapshot: false,
    endSnapshot() {
      if (!state.snapshot) return
      state.snapshot = false
      readOnly(false)
      if (!db.inTransaction) return
      // A read transaction has nothing to lose: whatever ends it (a damaged page found on the way
      // out) is left for the statements that read it to report, never thrown from the turn's end.
      try {
        commit.run()
      } catch {
        try {
          if (db.inTransaction) rollback.run()
        } catch {
          // the connection cannot end it either: its next statement will say why
        }
      }
    },
  }

  function openSnapshot(): number {
    last = undefined
    commits?.mark()
    begin.run()
    state.snapshot = true
    readOnly(true)
    setImmediate(state.endSnapshot)
    try {
      last = readPragma(pragma)
    } catch (error) {
      state.endSnapshot()
      throw error
    }
    return last
  }

  function fresh(): number {
    if (state.snapshot && last !== undefined) {
      if (commits === null || commits.unchangedSinceMark()) return last
      state.endSnapshot()
    }
    if (db.inTransaction || !snapshots) return readPragma(pragma)
    return openSnapshot()
  }

  function read(): number {
    if (current === undefined) {
      current = fresh()
      queueMicrotask(forget)
    }
    return current
  }

  states.set(db, state)
  return state
}

const readPragma = (statement: Statement<[], number>): number => statement.get() as number
