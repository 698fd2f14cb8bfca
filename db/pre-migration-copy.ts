import { closeSync, fsyncSync, openSync, readSync, renameSync, rmSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import type { Database } from 'better-sqlite3'
import { createPrivateFile } from '../lib/private-files.js'
import { productVersion } from '../lib/product-files.js'

export interface PreMigrationCopy {
  file: string
  /** The schema version of the database the copy holds. */
  schema: number
  /** true: a copy from before an interrupted migration was there already and is kept as it is. */
  kept: boolean
  ms: number
}

/** `<database>.before-<version>`: the version of the build that migrates it. */
export function preMigrationCopyName(path: string, version = productVersion()): string {
  return `${path}.before-${version}`
}

/** The schema version (user_version) in a SQLite file's header, without opening it with SQLite. */
export function schemaVersionOf(file: string): number | undefined {
  let fd: number
  try {
    fd = openSync(file, 'r')
  } catch {
    return undefined
  }
  try {
    const header = Buffer.alloc(100)
    if (readSync(fd, header, 0, 100, 0) < 100) return undefined
    if (header.toString('latin1', 0, 16) !== 'SQLite format 3\0') return undefined
    return header.readUInt32BE(60)
  } finally {
    closeSync(fd)
  }
}

function syncToDisk(path: string, flags: string): void {
  const fd = openSync(path, flags)
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/**
 * Before migrations change a database that holds data, a consistent copy of it as it is, so a
 * rollback is the previous build on this copy (docs/OPERATIONS.md, "Roll back"). `VACUUM INTO`
 * is SQLite's one-statement online copy: a snapshot read in one transaction, so other processes
 * may keep reading and writing. (better-sqlite3's stepwise backup is asynchronous; opening a
 * database is not.) The copy is the service user's only (mode 0600: it holds patient data),
 * written under a temporary name, flushed, then renamed.
 *
 * A copy of that name with an older schema than the database is kept: it is from before an
 * upgrade that stopped half-way (or raced with another process), and the truer rollback point.
 */
export function keepCopyBeforeMigrating(db: Database, path: string, schema: number): PreMigrationCopy {
  const started = performance.now()
  // Absolute, for the log: the service's working directory is not the reader's.
  const file = resolve(preMigrationCopyName(path))
  const existing = schemaVersionOf(file)
  if (existing !== undefined && existing < schema) {
    return { file, schema: existing, kept: true, ms: performance.now() - started }
  }
  const partial = `${file}.${process.pid}.partial`
  rmSync(partial, { force: true })
  // VACUUM INTO fills an empty file and keeps its mode.
  createPrivateFile(partial)
  try {
    db.prepare('VACUUM INTO ?').run(partial)
    syncToDisk(partial, 'r+')
    renameSync(partial, file)
    syncToDisk(dirname(file), 'r')
  } catch (error) {
    rmSync(partial, { force: true })
    throw error
  }
  return { file, schema, kept: false, ms: performance.now() - started }
}

/** One line for the log (server) or stderr (the CLI). */
export function describeCopy(copy: PreMigrationCopy, from: number, to: number): string {
  const what = copy.kept
    ? `kept the copy ${copy.file} (schema ${copy.schema}) from before an earlier, unfinished migration`
    : `kept a consistent copy of the database in ${copy.file} (${Math.round(copy.ms)} ms)`
  return `migrating the database from schema ${from} to ${to}: ${what}; to roll back, run the previous version on that copy`
}
