import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { unsafeDirectoryReason } from '../lib/private-files.js'

/**
 * Which files in BACKUP_DIR are the service's scheduled backups. A name proves nothing (anyone
 * who can write there can choose one, and two empty files named for 2099 once made every real
 * backup look old): a backup counts only when it is a regular file of the service's user (never a
 * link), named as the service names them, and its content is a whole SQLite file that carries
 * the service's backup mark. Its time is the time in its name, which the service wrote when it took
 * it, never the file's modification time: a copy put back with `cp`, a tar extracted, a `sqlite3`
 * that opened it for writing or a `touch` all change that, and an old backup would then look like
 * the newest, be kept in place of a newer one and tell /health that backups are current.
 */

/** `application_id` written into every backup the service seals ("FSB1"). */
export const BACKUP_MARK = 0x46534231
const HEADER_BYTES = 100

export interface BackupFile {
  file: string
  /** The time in its name (ms): when the service began the copy. */
  at: number
}

/** A scheduled backup's file name, e.g. `facility-20261125T030000000Z.db`. */
export function backupNameFor(at: number): string {
  const iso = new Date(at).toISOString() // 2026-11-25T20:30:00.123Z
  return `facility-${iso.replace(/[-:]/g, '').replace('.', '')}.db`
}

/** The time a backup's name carries, or null for a name the service never gives (a month 13, a minute 61). */
export function timeOfBackupName(name: string): number | null {
  const digits = /^facility-(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(\d{3})Z\.db$/.exec(name)
  if (digits === null) return null
  const [year, month, day, hours, minutes, seconds, ms] = digits.slice(1).map(Number) as number[]
  const at = Date.UTC(year as number, (month as number) - 1, day, hours, minutes, seconds, ms)
  return backupNameFor(at) === name ? at : null
}

function readHeader(file: string): Buffer | null {
  let fd: number
  try {
    // O_NOFOLLOW: a link put in the listed file's place is not read through; O_NONBLOCK: nor is a FIFO waited on.
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  } catch {
    return null
  }
  try {
    const stat = fstatSync(fd)
    if (!stat.isFile()) return null
    const header = Buffer.alloc(HEADER_BYTES)
    if (readSync(fd, header, 0, HEADER_BYTES, 0) < HEADER_BYTES) return null
    // The whole file is there: SQLite's page count (valid while the two counters agree) times the page size.
    const pageSize = header.readUInt16BE(16) === 1 ? 65_536 : header.readUInt16BE(16)
    const pages = header.readUInt32BE(28)
    if (header.readUInt32BE(24) !== header.readUInt32BE(92) || stat.size !== pageSize * pages) return null
    return header
  } finally {
    closeSync(fd)
  }
}

/** Whether `file` holds a complete SQLite database carrying the service's backup mark. */
export function carriesBackupMark(file: string): boolean {
  const header = readHeader(file)
  if (header === null) return false
  return header.toString('latin1', 0, 16) === 'SQLite format 3\0' && header.readUInt32BE(68) === BACKUP_MARK
}

/** The service's backups in `dir`, newest first by the time in their names; everything else is not seen. */
export function listBackups(dir: string): BackupFile[] {
  const uid = process.getuid?.()
  const found: BackupFile[] = []
  for (const name of readdirSync(dir)) {
    const at = timeOfBackupName(name)
    if (at === null) continue
    const file = join(dir, name)
    let stat: ReturnType<typeof lstatSync>
    try {
      stat = lstatSync(file)
    } catch {
      continue // removed meanwhile
    }
    if (!stat.isFile() || (uid !== undefined && stat.uid !== uid)) continue
    if (carriesBackupMark(file)) found.push({ file, at })
  }
  return found.sort((a, b) => b.at - a.at || (b.file < a.file ? -1 : 1))
}

/**
 * The newest backup that exists now, as /health reports it. One dated later than now (a clock set
 * back since) is not taken for the last backup: its age would be negative.
 */
export function newestBackup(dir: string, now = Date.now()): BackupFile | null {
  try {
    // A directory swapped for a link (or opened to others) is not read: its backups are failing.
    if (unsafeDirectoryReason(dir) !== null) return null
    return listBackups(dir).find((backup) => backup.at <= now) ?? null
  } catch {
    return null // a missing or unreadable directory has no backup in it
  }
}

/**
 * Removes the service's backups beyond the newest `keep`, never `spare` (the one just taken, even
 * if the clock once ran ahead and older copies look newer). Unlinking removes a name, never what a
 * link points to; links and foreign files are not listed at all. Returns the removed files.
 */
export function pruneBackups(dir: string, keep: number, spare?: string): string[] {
  const backups = listBackups(dir)
  const kept = new Set(backups.slice(0, keep).map((backup) => backup.file))
  if (spare !== undefined && !kept.has(spare) && backups.some((b) => b.file === spare)) {
    const oldestKept = backups.slice(0, keep).at(-1)
    if (oldestKept) kept.delete(oldestKept.file)
    kept.add(spare)
  }
  const removed: string[] = []
  for (const old of backups) {
    if (kept.has(old.file)) continue
    rmSync(old.file, { force: true })
    removed.push(old.file)
  }
  return removed
}
