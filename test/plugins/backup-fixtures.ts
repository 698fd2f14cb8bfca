import { utimesSync } from 'node:fs'
import BetterSqlite3 from 'better-sqlite3'
import { type BackupFile, takeBackup } from '../../db/backups.js'
import type { Database } from '../../db/connection.js'

/** A real, sealed backup of `db` in `dir`, named for `at` (its time), with `at` as its modification time too. */
export async function backupDatedAt(db: Database, dir: string, at: number): Promise<BackupFile> {
  const backup = await takeBackup(db, dir, at)
  utimesSync(backup.file, at / 1000, at / 1000)
  return { file: backup.file, at }
}

const PROBE_INDEX = 'CREATE INDEX backup_probe_a ON backup_probe (a)'

/**
 * Makes the database at `path` fail SQLite's integrity check while every table the service uses
 * stays sound: an index whose schema is changed to a column its entries do not hold. Every copy
 * of the file carries the fault, as a real damaged page would be copied.
 */
export function breakProbeIndex(path: string): void {
  const db = new BetterSqlite3(path)
  try {
    db.exec(`CREATE TABLE IF NOT EXISTS backup_probe (a, b); ${PROBE_INDEX.replace('INDEX', 'INDEX IF NOT EXISTS')}`)
    db.exec('INSERT INTO backup_probe VALUES (1, 2)')
    rewriteProbeIndex(db, PROBE_INDEX.replace('(a)', '(b)'))
  } finally {
    db.close()
  }
}

/** Undoes breakProbeIndex: the index says again what its entries hold. */
export function repairProbeIndex(path: string): void {
  const db = new BetterSqlite3(path)
  try {
    rewriteProbeIndex(db, PROBE_INDEX)
  } finally {
    db.close()
  }
}

function rewriteProbeIndex(db: BetterSqlite3.Database, sql: string): void {
  db.unsafeMode(true)
  db.pragma('writable_schema = ON')
  db.prepare("UPDATE sqlite_master SET sql = ? WHERE name = 'backup_probe_a'").run(sql)
  db.pragma('writable_schema = OFF')
}
