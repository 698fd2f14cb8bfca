import { existsSync } from 'node:fs'
import { dirname } from 'node:path'
import BetterSqlite3, { type Database } from 'better-sqlite3'
import { createPrivateFile, makePrivateDirectory } from '../lib/private-files.js'
import { sqliteOptions } from './connection-options.js'
import { migrate } from './migrations.js'
import { keepCopyBeforeMigrating, type PreMigrationCopy } from './pre-migration-copy.js'

export type { Database } from 'better-sqlite3'
export { describeCopy, type PreMigrationCopy } from './pre-migration-copy.js'

const IN_MEMORY = ':memory:'

export const DEFAULT_BUSY_TIMEOUT_MS = 5000

export interface OpenOptions {
  /** Told of the copy kept before migrations change a database that holds data (the server logs it). */
  onPreMigrationCopy?: (copy: PreMigrationCopy, from: number, to: number) => void
}

/** Only a database in a plain file of its own has a file to copy. */
function isPlainFile(path: string): boolean {
  return path !== IN_MEMORY && path !== '' && !path.startsWith('file:')
}

/**
 * A new database file is created 0600, in a directory created 0700, before SQLite opens it:
 * SQLite would create it 0644 (less the umask), and it makes the `-wal` and `-shm` files with the
 * database file's mode. An existing file or directory keeps the mode its owner gave it.
 */
function preparePrivateFile(path: string): void {
  if (existsSync(path)) return
  makePrivateDirectory(dirname(path))
  try {
    createPrivateFile(path)
  } catch (error) {
    // Another process (the CLI, a second start) may have made it meanwhile.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
  }
}

/**
 * Opens (creating when needed) the service's database and migrates it. WAL lets readers run
 * beside the writer; synchronous=FULL makes every acknowledged commit durable across a power
 * cut, which a clinical record needs more than the last bit of write speed. `busyTimeoutMs` is how
 * long a statement waits, blocking, for another process's lock: right for the CLI and for the
 * migrations at start; the server then sets it to 0 and waits asynchronously (write-queue.ts).
 * Before migrations change a database that holds data, a copy of it is kept
 * (`<database>.before-<version>`, db/pre-migration-copy.ts).
 */
export function openDatabase(path: string, busyTimeoutMs = DEFAULT_BUSY_TIMEOUT_MS, opts: OpenOptions = {}): Database {
  if (isPlainFile(path)) preparePrivateFile(path)
  const db = new BetterSqlite3(path, sqliteOptions())
  try {
    db.pragma(`busy_timeout = ${Math.max(0, Math.floor(busyTimeoutMs))}`)
    db.pragma('journal_mode = WAL')
    db.pragma('synchronous = FULL')
    db.pragma('foreign_keys = ON')
    migrate(db, undefined, function copyBeforeMigrating(current, latest) {
      if (current === 0 || !isPlainFile(path)) return
      const copy = keepCopyBeforeMigrating(db, path, current)
      opts.onPreMigrationCopy?.(copy, current, latest)
    })
    return db
  } catch (error) {
    db.close()
    throw error
  }
}
