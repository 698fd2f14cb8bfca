import type { Database } from 'better-sqlite3'

/**
 * Runs `work` (a write transaction of the write queue) with SQLite's statement journals in memory.
 *
 * Inside a transaction, a statement that may fail halfway (an insert whose triggers write other
 * tables, one that may hit a unique index) first copies each page it is about to change to a
 * statement journal, so that its failure undoes it alone. SQLite keeps that journal in memory up to
 * 64 KiB, then moves it to a temporary file for the rest of the transaction: one `pwrite` per page.
 * A produced notification's insert (eight indexes and a counter) crosses that line, and from then on
 * every page the batch journals was a system call: under a stream of admissions about a fifth of the
 * event loop's time (docs/PERFORMANCE.md). With `temp_store = MEMORY` the journal stays in memory;
 * each statement empties it when it ends, so it holds at most the pages one statement changes (or
 * one nested transaction, a savepoint, until it ends: writes that may change many rows, like the
 * feed's prune, work in bounded chunks).
 *
 * Reads keep SQLite's default: a sort larger than the page cache (a list asked with a very large
 * `$skip`) spills to a temporary file rather than to the heap. So the setting is on only while the
 * transaction runs. Changing it outside a transaction is a flag flip as long as the connection has
 * no temporary database open; it has none (no TEMP table, trigger or view is ever made on it, and
 * test/db/statement-journals.test.ts checks that), else each change would close it.
 */
export function withStatementJournalsInMemory(db: Database): <T>(work: () => T) => T {
  // What the connection had (SQLite's default unless someone set it): restored after each batch.
  const before = Number(db.pragma('temp_store', { simple: true }))
  // SQLite applies this pragma when the statement is compiled, not when it runs: a prepared one
  // would change nothing the second time, so each change is compiled anew (a few µs per batch).
  return function inMemoryDuring<T>(work: () => T): T {
    db.exec('PRAGMA temp_store = MEMORY')
    try {
      return work()
    } finally {
      try {
        db.exec(`PRAGMA temp_store = ${before}`)
      } catch {
        // Refused only inside a transaction with a temporary database open (never here, see
        // above): reads would then sort in memory until the next batch, a cost, not an error.
      }
    }
  }
}
