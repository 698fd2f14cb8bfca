import type { Database, Statement, Transaction } from 'better-sqlite3'
import { type CommitWatch, watchCommits } from './wal-index-header.js'

interface ConnectionState {
  read: () => number
  commits: CommitWatch | null
  /** A read transaction of ours is open (see below). */
  snapshot: boolean
  endSnapshot: () => void
  strayWrites: Set<() => void>
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

/**
 * Runs a better-sqlite3 transaction function as a write of its own, outside the write queue: the
 * read snapshot ended first, then in an IMMEDIATE transaction committed when it returns (a
 * savepoint inside a write transaction already open).
 */
export function writeAlone<F extends (...args: never[]) => unknown>(
  db: Database,
  transaction: Transaction<F>,
  ...args: Parameters<Transaction<F>['immediate']>
): ReturnType<F> {
  endReadSnapshot(db)
  return transaction.immediate(...args)
}

/** Whether `db` is inside a transaction that may write (one of its own, not the read snapshot). */
export function inWriteTransaction(db: Database): boolean {
  return db.inTransaction && states.get(db)?.snapshot !== true
}

/** Calls `listener` when a write ran inside a read snapshot (a defect: it did not end it first). */
export function onStrayWrite(db: Database, listener: () => void): void {
  stateOf(db).strayWrites.add(listener)
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

  // A write that did not end the snapshot first (every write must) is committed at the turn's end,
  // without the write queue's sync: told to `strayWrites` listeners (the server logs it as an
  // error). Not prevented with `PRAGMA query_only`: setting it expires every prepared statement of
  // the connection, so each turn would compile them all again.
  const totalChanges = db.prepare<[], number>('SELECT total_changes()').pluck()
  let changesAtOpen = 0

  const state: ConnectionState = {
    read,
    commits,
    snapshot: false,
    strayWrites: new Set(),
    endSnapshot() {
      if (!state.snapshot) return
      state.snapshot = false
      if (!db.inTransaction) return
      const stray = totalChanges.get() !== changesAtOpen
      // A read transaction has nothing to lose: whatever ends it (a damaged page found on the way
      // out) is left for the statements that read it to report, never thrown from the turn's end.
      try {
        commit.run()
        if (stray) for (const listener of state.strayWrites) listener()
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
    changesAtOpen = totalChanges.get() as number
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
