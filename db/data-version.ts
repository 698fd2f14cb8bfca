import type { Database } from 'better-sqlite3'
import { type CommitWatch, watchCommits } from './wal-index-header.js'

const readers = new WeakMap<Database, { read: () => number; commits: CommitWatch | null }>()

/**
 * `PRAGMA data_version` of a connection (it changes when another connection commits: the CLI
 * creating or revoking a token, blocking an account), read at most once per synchronous run: a
 * request's token check and its blocked-account check ask one after the other, and nothing can
 * commit in between that the request could have seen (its bytes were read before either asked).
 * The value is forgotten at the next microtask checkpoint, so every later request asks afresh.
 *
 * Asking afresh costs one read of the WAL-index header (db/wal-index-header.ts) while no
 * connection has committed since the pragma was last read: the header is saved *before* that
 * read, so a commit that lands between the two changes the header and the next request reads the
 * pragma again; a value is remembered only once the pragma answered. Any commit changes the
 * header, this connection's own included (they leave data_version as it is, and cost the next
 * request a read of the pragma). Inside a transaction the pragma tells that transaction's snapshot,
 * not the file as it is now: there it is read and never remembered.
 */
export function dataVersionOf(db: Database): () => number {
  const known = readers.get(db)
  if (known) return known.read
  const statement = db.prepare<[], number>('PRAGMA data_version').pluck()
  const commits = watchCommits(db)
  let current: number | undefined
  let last: number | undefined
  const forget = () => {
    current = undefined
  }
  const fresh = (): number => {
    if (db.inTransaction || !commits) return statement.get() as number
    if (last !== undefined && commits.unchangedSinceMark()) return last
    last = undefined
    commits.mark()
    const value = statement.get() as number
    last = value
    return value
  }
  const read = (): number => {
    if (current === undefined) {
      current = fresh()
      queueMicrotask(forget)
    }
    return current
  }
  readers.set(db, { read, commits })
  return read
}

/** Gives back what `dataVersionOf` holds open for `db`; call after `db.close()`. */
export function releaseDataVersion(db: Database): void {
  readers.get(db)?.commits?.release()
  readers.delete(db)
}
