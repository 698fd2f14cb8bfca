import { closeSync, fsyncSync, openSync, renameSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import BetterSqlite3, { type Database } from 'better-sqlite3'
import { createPrivateFile, temporaryName, unsafeDirectoryReason } from '../lib/private-files.js'
import { BACKUP_MARK, type BackupFile, backupNameFor } from './backup-files.js'
import { sqliteOptions } from './connection-options.js'

export { type BackupFile, listBackups, newestBackup, pruneBackups } from './backup-files.js'

// Pages per step of the online backup (4 KiB each): the event loop is free between steps.
const PAGES_PER_STEP = 1024
/** What SQLite may leave beside a database file it had open. */
const SIDE_FILES = ['-journal', '-wal', '-shm']

export interface Verification {
  ok: boolean
  /** What was found: "ok", or what is wrong with the file. */
  message: string
}

/**
 * Whether a file is a sound copy of a facility-service database: SQLite's full integrity check,
 * and the service's own tables present (a sound SQLite file of something else is no backup).
 */
export function verifyBackup(file: string): Verification {
  let copy: Database | undefined
  try {
    copy = new BetterSqlite3(file, sqliteOptions({ readonly: true, fileMustExist: true }))
    const problems = copy.pragma('integrity_check', { simple: false }) as { integrity_check: string }[]
    const first = problems[0]?.integrity_check
    if (first !== 'ok') return { ok: false, message: `integrity check failed: ${first ?? 'no answer'}` }
    const tables = copy
      .prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('ward_occupants', 'tokens')")
      .pluck()
      .get() as number
    if (tables !== 2) return { ok: false, message: 'not a facility-service database (its tables are missing)' }
    return { ok: true, message: 'ok' }
  } catch (error) {
    return { ok: false, message: (error as Error).message }
  } finally {
    copy?.close()
  }
}

/**
 * Makes a fresh copy a file that stands alone: out of WAL mode (the copy carries the server's WAL
 * flag, and any later opening, even read-only, would leave `-wal` and `-shm` files beside it),
 * and marked as the service's backup (db/backup-files.ts counts only marked files).
 */
export function sealBackup(file: string): void {
  const copy = new BetterSqlite3(file, sqliteOptions({ fileMustExist: true }))
  try {
    copy.pragma('journal_mode = DELETE')
    copy.pragma(`application_id = ${BACKUP_MARK}`)
  } finally {
    copy.close()
  }
  removeSideFiles(file)
}

/** The `-journal`, `-wal` and `-shm` files of `file`, if SQLite left any. */
export function removeSideFiles(file: string): void {
  for (const suffix of SIDE_FILES) rmSync(`${file}${suffix}`, { force: true })
}

function syncToDisk(path: string): void {
  const fd = openSync(path, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/** Refuses a backup directory someone else could read into or redirect (lib/private-files.ts). */
export function checkBackupDirectory(dir: string): void {
  const reason = unsafeDirectoryReason(dir)
  if (reason !== null) throw new Error(`the backup directory ${dir} ${reason}`)
}

/**
 * One backup of `db` into `dir`, taken while the service keeps working: SQLite's online backup in
 * steps (writes through this same connection are copied along, not restarted), into an
 * unguessable temporary name created 0600 before the first byte is copied, sealed, checked with
 * `verifyBackup`, flushed, and only then renamed to its final name (a rename replaces whatever
 * name was there, a link included, and never writes through it). A failed or unsound copy is
 * removed with every file SQLite made beside it, never left to be mistaken for a backup.
 */
export async function takeBackup(db: Database, dir: string, at = Date.now()): Promise<BackupFile> {
  checkBackupDirectory(dir) // at every backup: the directory may have been swapped since the start
  const name = backupNameFor(at)
  const file = join(dir, name)
  const partial = temporaryName(dir, name)
  createPrivateFile(partial)
  try {
    await db.backup(partial, { progress: () => PAGES_PER_STEP })
    sealBackup(partial)
    const check = verifyBackup(partial)
    if (!check.ok) throw new Error(`the copy failed its check (${check.message})`)
    syncToDisk(partial)
    renameSync(partial, file)
    syncToDisk(dir)
    return { file, at }
  } finally {
    rmSync(partial, { force: true })
    removeSideFiles(partial)
  }
}
