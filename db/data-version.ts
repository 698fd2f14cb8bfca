import type { Database } from 'better-sqlite3'
import { watchCommits } from './wal-index-header.js'

const readers = new WeakMap<Database, () => number>()

/**
 * `PRAGMA data_version` of a connection (it changes when another connection commits: the CLI
 * creating or revoking a token, blocking an account), read at most once per synchronous run: a
 * request's token check and its blocked-account check ask one after the other, and nothing can
 * commit in between that the request could have seen (its bytes were read before either asked).
 * The value is forgotten at the next microtask checkpoint, so every later request asks afresh.
 *
 * Asking afresh costs one read of the WAL-index header (db/wal-index-header.ts) while no
 * connection has committed since the last read of the pragma: the header is saved *before* that
 * read, so a commit that lands between the two changes the header and the next request reads the
 * pragma again. Any commit changes the header, this connection's own included (they leave
 * data_version as it is, and cost the next request a read of the pragma).
 */
export function dataVersionOf(db: Database): () => number {
  const known = readers.get(db)
  if (known) return known
  const statement = db.prepare<[], number>('PRAGMA data_version').pluck()
  const commits = watchCommits(db)
  let current: number | undefined
  let last: number | undefined
  const forget = () => {
    current = undefined
  }
  const read = (): number => {
    if (current === undefined) {
      if (last !== undefined && commits?.unchangedSinceMark()) current = last
      else {
        commits?.mark()
        current = last = statement.get() as number
      }
      queueMicrotask(forget)
    }
    return current
  }
  readers.set(db, read)
  return read
}
