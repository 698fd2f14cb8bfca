import { chmodSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import BetterSqlite3, { type Database } from 'better-sqlite3'
import { sqliteOptions } from './connection-options.js'

/** Scheduled backups are named by their time, so their names sort as their ages do. */
const NAME = /^facility-(\d{8}T\d{6}\d{3}Z)\.db$/
// Pages per step of the online backup (4 KiB each): the event loop is free between steps.
const PAGES_PER_STEP = 1024

export interface BackupFile {
  file: string
  at: number
}

export interface Verification {
  ok: boolean
  /** What was found: "ok", or what is wrong with the file. */
  message: string
}

function nameFor(at: number): string {
  const iso = new Date(at).toISOString() // 2026-11-25T20:30:00.123Z
  return `facility-${iso.replace(/[-:]/g, '').replace('.', '')}.db`
}

function timeOf(name: string): number | null {
  const match = NAME.exec(name)
  if (!match) return null
  const t = match[1] as string
  return Date.parse(
    `${t.slice(0, 4)}-${t.slice(4, 6)}-${t.slice(6, 8)}T${t.slice(9, 11)}:${t.slice(11, 13)}:${t.slice(13, 15)}.${t.slice(15, 18)}Z`,
  )
}

/** The scheduled backups in `dir`, newest first (other files are never touched). */
export function listBackups(dir: string): BackupFile[] {
  const found: BackupFile[] = []
  for (const name of readdirSync(dir)) {
    const at = timeOf(name)
    if (at !== null) found.push({ file: join(dir, name), at })
  }
  return found.sort((a, b) => b.at - a.at)
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
 * One backup of `db` into `dir`, taken while the service keeps working: SQLite's online backup in
 * steps (writes through this same connection are copied along, not restarted), into a temporary
 * name, made readable by the service's user only, checked with `verifyBackup`, and only then
 * renamed to its final name. A failed or unsound copy is removed, never left to be mistaken for a
 * backup. Returns the new file.
 */
export async function takeBackup(db: Database, dir: string, at = Date.now()): Promise<BackupFile> {
  const file = join(dir, nameFor(at))
  const partial = join(dir, `.${nameFor(at)}.partial`)
  try {
    statSync(dir) // a missing directory is a failure of its own, named as such
    await db.backup(partial, { progress: () => PAGES_PER_STEP })
    chmodSync(partial, 0o600)
    const check = verifyBackup(partial)
    if (!check.ok) throw new Error(`the copy failed its check (${check.message})`)
    renameSync(partial, file)
    return { file, at }
  } catch (error) {
    for (const part of [partial, `${partial}-journal`, `${partial}-wal`]) rmSync(part, { force: true })
    throw error
  }
}

/** Removes the oldest scheduled backups beyond the newest `keep`; returns the removed files. */
export function pruneBackups(dir: string, keep: number): string[] {
  const removed: string[] = []
  for (const old of listBackups(dir).slice(keep)) {
    rmSync(old.file, { force: true })
    removed.push(old.file)
  }
  return removed
}
