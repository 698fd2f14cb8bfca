import createError from '@fastify/error'

/**
 * What can go wrong with the storage under the database, as the service tells it apart:
 * - full: no space left (SQLITE_FULL, ENOSPC) or the database reached its size limit;
 * - busy: another process holds the write lock (SQLITE_BUSY, SQLITE_LOCKED);
 * - io: the operating system failed a read or write (SQLITE_IOERR_*, EIO);
 * - corrupt: the file is damaged or is not a database (SQLITE_CORRUPT, SQLITE_NOTADB);
 * - readonly: the file, its folder or the file system cannot be written (SQLITE_READONLY_*, EROFS).
 */
export type StorageFault = 'full' | 'busy' | 'io' | 'corrupt' | 'readonly'

const BY_CODE: [RegExp, StorageFault][] = [
  [/^(SQLITE_FULL|ENOSPC|EDQUOT)$/, 'full'],
  [/^(SQLITE_BUSY|SQLITE_LOCKED)(_|$)/, 'busy'],
  [/^(SQLITE_IOERR|SQLITE_CANTOPEN)(_|$)|^EIO$/, 'io'],
  [/^(SQLITE_CORRUPT|SQLITE_NOTADB)(_|$)/, 'corrupt'],
  [/^SQLITE_READONLY(_|$)|^(EROFS|EACCES|EPERM)$/, 'readonly'],
]

/** The storage fault an error stands for, or null for any other error (a bug, a constraint ...). */
export function storageFaultOf(error: unknown): StorageFault | null {
  const code = (error as { code?: unknown } | null)?.code
  if (typeof code !== 'string') return null
  for (const [pattern, fault] of BY_CODE) if (pattern.test(code)) return fault
  return null
}

/** What an operator reads in the answer, in /health and in the log. */
export const FAULT_MESSAGES: Record<StorageFault, string> = {
  full:
    'the database cannot take writes: the disk holding it is full (or the database reached its size limit); ' +
    'nothing was changed, reads still work; an operator must free space, writes then succeed again by themselves',
  busy:
    'the database is locked by another process (an open sqlite3 session, a maintenance script) for longer than ' +
    'this service waits; nothing was changed; retry later',
  io: 'the database file could not be read or written (an I/O error of the disk or file system); nothing was changed',
  corrupt:
    'the database file is damaged; writes are refused until it is repaired or restored from a backup and the ' +
    'service restarted',
  readonly:
    'the database file cannot be written (read-only file, folder or file system, or missing permission); nothing was changed',
}

const StorageFullError = createError('STORAGE_FULL', '%s', 507)
const DatabaseBusyError = createError('DATABASE_BUSY', '%s', 503)
const StorageIoError = createError('STORAGE_IO_ERROR', '%s', 503)
const StorageCorruptError = createError('STORAGE_CORRUPT', '%s', 503)
const StorageReadOnlyError = createError('STORAGE_READ_ONLY', '%s', 503)

const ERRORS = {
  full: StorageFullError,
  busy: DatabaseBusyError,
  io: StorageIoError,
  corrupt: StorageCorruptError,
  readonly: StorageReadOnlyError,
} as const

const FAULT_BY_ANSWER_CODE: Record<string, StorageFault> = {
  STORAGE_FULL: 'full',
  DATABASE_BUSY: 'busy',
  STORAGE_IO_ERROR: 'io',
  STORAGE_CORRUPT: 'corrupt',
  STORAGE_READ_ONLY: 'readonly',
}

/** The fault of an error that is either SQLite's (or the system's) or already one of our answers. */
export function faultOfError(error: unknown): StorageFault | null {
  const code = (error as { code?: unknown } | null)?.code
  return (typeof code === 'string' ? FAULT_BY_ANSWER_CODE[code] : undefined) ?? storageFaultOf(error)
}

/** Seconds a client is told to wait before retrying (`Retry-After`) after each fault. */
export const RETRY_AFTER_SECONDS: Record<StorageFault, number> = {
  full: 60,
  busy: 1,
  io: 30,
  corrupt: 300,
  readonly: 60,
}

/** The HTTP error (stable code, status, operator message) a storage fault is answered with. */
export function storageError(fault: StorageFault): Error & { code: string; statusCode: number } {
  return new ERRORS[fault](FAULT_MESSAGES[fault]) as Error & { code: string; statusCode: number }
}

export interface StorageCondition {
  fault: Exclude<StorageFault, 'busy'>
  /** The SQLite or system error code, e.g. SQLITE_FULL. */
  code: string
  since: number
  /** Cleared only by a restart (a failed sync of the WAL, see latch). */
  latched?: boolean
  /** What to tell instead of FAULT_MESSAGES[fault]. */
  message?: string
}

/**
 * A sync of the WAL that failed. The commits it covered were already visible, and after a failed
 * fsync Linux marks the pages clean and reports the error once: a later sync that succeeds proves
 * nothing, and a hole in the WAL would make recovery drop every commit after it. So, as PostgreSQL
 * does after a failed fsync, nothing is trusted any more until a restart recovers from the disk.
 */
export const SYNC_FAILED_MESSAGE =
  'the disk did not confirm what the database wrote (the sync of its WAL file failed): the latest writes may or ' +
  'may not be stored; writes and reads are refused until the service is restarted, which recovers what is on disk'

export function syncFailedError(): Error & { code: string; statusCode: number } {
  return new StorageIoError(SYNC_FAILED_MESSAGE) as Error & { code: string; statusCode: number }
}

type Listener = (event: { condition: StorageCondition | null; error?: unknown }) => void

/**
 * Whether the connection's storage can take writes, as learnt from the writes themselves: set when
 * a write meets a fault, cleared by the next commit that stored something. /health reads it, so it
 * never has to write. Listeners hear each change once, so a fault is logged once per episode, not
 * once per request. Damage (corrupt) stays until the service restarts: writing on into a damaged
 * file only spreads the damage.
 */
export class StorageState {
  condition: StorageCondition | null = null
  private readonly listeners = new Set<Listener>()

  onChange(listener: Listener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** Notes a fault met by a write or a read; returns it (null for an error that is not one). */
  report(error: unknown, now = Date.now()): StorageFault | null {
    const fault = storageFaultOf(error)
    if (fault === null || fault === 'busy') return fault
    if (this.condition?.fault === fault || this.condition?.fault === 'corrupt' || this.condition?.latched) return fault
    const code = String((error as { code?: unknown }).code)
    this.condition = { fault, code, since: now }
    for (const listener of this.listeners) listener({ condition: this.condition, error })
    return fault
  }

  /** A failed sync of the WAL (SYNC_FAILED_MESSAGE): stays until the service restarts. */
  latch(error: unknown, now = Date.now()): void {
    if (this.condition?.latched) return
    this.condition = {
      fault: 'io',
      code: 'SQLITE_IOERR_FSYNC',
      since: now,
      latched: true,
      message: SYNC_FAILED_MESSAGE,
    }
    for (const listener of this.listeners) listener({ condition: this.condition, error })
  }

  /** A commit stored something: the storage takes writes again. */
  recovered(): void {
    if (this.condition === null || this.condition.fault === 'corrupt' || this.condition.latched) return
    this.condition = null
    for (const listener of this.listeners) listener({ condition: null })
  }
}
