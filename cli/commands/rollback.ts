import { existsSync, readdirSync, readlinkSync, realpathSync, renameSync } from 'node:fs'
import type { Command } from 'commander'
import { preMigrationCopyName, schemaVersionOf } from '../../db/pre-migration-copy.js'
import { insideExecutable } from '../../lib/executable.js'
import { productVersion } from '../../lib/product-files.js'
import { databasePath } from '../database.js'
import { CliError } from '../errors.js'
import type { CliIo } from '../io.js'

const SIDE_FILES = ['', '-wal', '-shm']

/**
 * `rollback`: back to the version before this one (docs/OPERATIONS.md, "Roll back"), with the
 * service stopped. The database becomes the copy this version kept before it migrated it
 * (`<database>.before-<version>`); the database as this version left it is kept beside it
 * (`<database>.after-<version>`, never deleted: it holds what was written since); inside the single
 * executable, the previous executable (`<executable>.previous`, left by `install -b -S .previous`)
 * is put back. Nothing is opened with SQLite, so running it as root leaves no root-owned file.
 */
export function addRollbackCommand(program: Command, io: CliIo): void {
  program
    .command('rollback')
    .description(
      'with the service stopped: put back the database copy kept before this version migrated it, and the previous executable',
    )
    .action(function rollback() {
      const database = databasePath(program)
      const copy = preMigrationCopyName(database)
      if (!existsSync(copy)) {
        throw new CliError(
          `no ${copy}: version ${productVersion()} has not migrated ${database}, so there is nothing to roll back`,
        )
      }
      refuseWhileOpen(database)
      const kept = keepCurrent(database)
      renameSync(copy, database)
      io.out(
        `${database} is the copy taken before version ${productVersion()} migrated it (schema ${schemaVersionOf(database)})`,
      )
      io.out(`the database as version ${productVersion()} left it is kept as ${kept}`)
      io.out(putBackExecutable())
      io.out('start the service again')
    })
}

/** Processes holding the file open (as root every process is seen; otherwise this user's). */
function openedBy(files: string[]): number[] {
  const holders = new Set<number>()
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    let fds: string[]
    try {
      fds = readdirSync(`/proc/${pid}/fd`)
    } catch {
      continue
    }
    for (const fd of fds) {
      try {
        if (files.includes(readlinkSync(`/proc/${pid}/fd/${fd}`))) holders.add(Number(pid))
      } catch {}
    }
  }
  return [...holders]
}

function refuseWhileOpen(database: string): void {
  const files = SIDE_FILES.map((suffix) => `${database}${suffix}`)
    .filter(existsSync)
    .map((file) => realpathSync(file))
  const holders = openedBy(files)
  if (holders.length > 0) {
    throw new CliError(
      `${database} is open in process ${holders.join(', ')}: stop the service first (systemctl stop facility-service)`,
    )
  }
}

/** Moves the database and its -wal/-shm aside together (SQLite pairs them by name). */
function keepCurrent(database: string): string {
  let kept = `${database}.after-${productVersion()}`
  if (SIDE_FILES.some((suffix) => existsSync(`${kept}${suffix}`))) kept += `.${Date.now()}`
  for (const suffix of SIDE_FILES) {
    if (existsSync(`${database}${suffix}`)) renameSync(`${database}${suffix}`, `${kept}${suffix}`)
  }
  return kept
}

function putBackExecutable(): string {
  if (!insideExecutable()) return 'put back the previous version of the service (this one runs from its sources)'
  const previous = `${process.execPath}.previous`
  if (!existsSync(previous)) return `no ${previous}: put back the previous executable yourself`
  renameSync(previous, process.execPath)
  return `the previous executable is back in ${process.execPath}`
}
