import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import BetterSqlite3, { type Database } from 'better-sqlite3'
import { migrate } from './migrations.js'

export type { Database } from 'better-sqlite3'

const IN_MEMORY = ':memory:'

export const DEFAULT_BUSY_TIMEOUT_MS = 5000

/**
 * Opens (creating when needed) the service's database and migrates it. WAL lets readers run
 * beside the writer; synchronous=FULL makes every acknowledged commit durable across a power
 * cut, which a clinical record needs more than the last bit of write speed. `busyTimeoutMs` is how
 * long a statement waits, blocking, for another process's lock: right for the CLI and for the
 * migrations at start; the server then sets it to 0 and waits asynchronously (write-queue.ts).
 */
export function openDatabase(path: string, busyTimeoutMs = DEFAULT_BUSY_TIMEOUT_MS): Database {
  if (path !== IN_MEMORY && !path.startsWith('file:')) mkdirSync(dirname(path), { recursive: true })
  const db = new BetterSqlite3(path)
  try {
    db.pragma(`busy_timeout = ${Math.max(0, Math.floor(busyTimeoutMs))}`)
    db.pragma('journal_mode = WAL')
    db.pragma('synchronous = FULL')
    db.pragma('foreign_keys = ON')
    migrate(db)
    return db
  } catch (error) {
    db.close()
    throw error
  }
}
