import { existsSync } from 'node:fs'
import { type Command, Option } from 'commander'
import { type Database, DEFAULT_BUSY_TIMEOUT_MS, describeCopy, openDatabase } from '../db/connection.js'
import { milliseconds } from './arguments.js'
import { CliError } from './errors.js'
import { processIo } from './io.js'

interface DatabaseOptions {
  database: string
  busyTimeout: number
}

/** The program-wide options naming the database file and how long to wait for its lock. */
export function addDatabaseOptions(program: Command): Command {
  return program
    .addOption(
      new Option('--database <path>', 'the SQLite database file').env('DATABASE_PATH').default('./data/facility.db'),
    )
    .addOption(
      new Option(
        '--busy-timeout <ms>',
        'how long to wait for a lock held by another process (the server, a sqlite3 shell)',
      )
        .env('DATABASE_BUSY_TIMEOUT_MS')
        .argParser(milliseconds)
        .default(DEFAULT_BUSY_TIMEOUT_MS),
    )
}

/** The --database the program was given (or its default). */
export function databasePath(program: Command): string {
  return program.opts<DatabaseOptions>().database
}

/**
 * The service's database. Only `token create` may start a new file: anything else on a path
 * that does not exist is a mistyped --database, and would quietly act on an empty copy.
 */
export function openExisting(program: Command, { mayCreate = false } = {}): Database {
  const path = databasePath(program)
  if (!mayCreate && path !== ':memory:' && !path.startsWith('file:') && !existsSync(path)) {
    throw new CliError(
      `no database at ${path}: pass --database (or set DATABASE_PATH) to the service's file, or start the service once to create it`,
    )
  }
  return openDatabase(path, program.opts<DatabaseOptions>().busyTimeout, {
    onPreMigrationCopy: (copy, from, to) => processIo.err(`facility-service: ${describeCopy(copy, from, to)}`),
  })
}

/** Runs `run` on the open database and closes it again, also when `run` throws. */
export function withDatabase<T>(program: Command, run: (db: Database) => T, options: { mayCreate?: boolean } = {}): T {
  const db = openExisting(program, options)
  try {
    return run(db)
  } finally {
    db.close()
  }
}
