import type { Database } from 'better-sqlite3'

const readers = new WeakMap<Database, () => number>()

/**
 * `PRAGMA data_version` of a connection (it changes when another connection commits: the CLI
 * creating or revoking a token, blocking an account), read at most once per synchronous run: a
 * request's token check and its blocked-account check ask one after the other, and nothing can
 * commit in between that the request could have seen (its bytes were read before either asked).
 * The value is forgotten at the next microtask checkpoint, so every later request reads it afresh.
 */
export function dataVersionOf(db: Database): () => number {
  const known = readers.get(db)
  if (known) return known
  const statement = db.prepare<[], number>('PRAGMA data_version').pluck()
  let current: number | undefined
  const forget = () => {
    current = undefined
  }
  const read = (): number => {
    if (current === undefined) {
      current = statement.get() as number
      queueMicrotask(forget)
    }
    return current
  }
  readers.set(db, read)
  return read
}
