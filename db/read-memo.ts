import type { Database } from 'better-sqlite3'
import { createLru } from '../lib/lru.js'

/** An answer and how many bytes of memory it holds (for the budget). */
interface Remembered<T> {
  value: T
  bytes: number
}

/**
 * Answers of a read, remembered while the database holds exactly what it held when they were
 * computed: a ward's tablets poll the same inbox page every few seconds, and between two changes
 * the answer cannot differ. The database's state is told by three counters SQLite keeps for this
 * connection: `PRAGMA data_version` changes when another connection (the CLI, an admin's shell)
 * commits, and `total_changes()` grows with every row this connection inserts, updates or deletes
 * (triggers included, rolled-back ones too, which only costs a needless recomputation), and
 * `schema_version` moves when this connection changes a table. While all three stay, no row has
 * changed, so a remembered answer is the one the read would compute; the first read after any
 * change starts afresh. An answer is keyed by everything it depends on besides the database (the
 * caller passes the viewer and the query), never shared between keys.
 *
 * `remember` must be called first thing inside the read transaction that computes the answer, so
 * the counters and the rows come from one snapshot, and never inside a transaction that may still
 * roll back (the counters would stay moved on while the rows went back).
 */
export interface ReadMemo<T> {
  /** The remembered answer under `key`, or `compute()`'s, remembered. */
  remember(key: string, compute: () => T): T
}

export function createReadMemo<T>(db: Database, maxBytes: number, sizeOf: (value: T) => number): ReadMemo<T> {
  // schema_version too: a table dropped or renamed by this connection moves neither of the others.
  const state = db
    .prepare<[], string>(
      "SELECT data_version || ',' || total_changes() || ',' || (SELECT schema_version FROM pragma_schema_version) FROM pragma_data_version",
    )
    .pluck()
  const answers = createLru<Remembered<T>>(Number.POSITIVE_INFINITY, maxBytes, (answer) => answer.bytes)
  let seenState: string | undefined

  return {
    remember(key: string, compute: () => T): T {
      if (maxBytes === 0) return compute()
      const current = state.get()
      if (current !== seenState) {
        answers.clear()
        seenState = current
      }
      const known = answers.get(key)
      if (known) return known.value
      const value = compute()
      const bytes = sizeOf(value) + key.length
      // An answer larger than the whole budget is not kept (it would push out every other one).
      if (bytes <= maxBytes) answers.set(key, { value, bytes })
      return value
    },
  }
}
