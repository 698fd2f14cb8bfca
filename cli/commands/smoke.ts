import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import BetterSqlite3 from 'better-sqlite3'
import type { Command } from 'commander'
import { sqliteOptions } from '../../db/connection-options.js'
import { insideExecutable } from '../../lib/executable.js'
import { productPath } from '../../lib/product-files.js'
import { databasePath } from '../database.js'
import { CliError } from '../errors.js'
import type { CliIo } from '../io.js'

type Example = typeof import('../../examples/smoke-test.mjs')

/** `smoke`: the example smoke test (examples/smoke-test.mjs), run on a throw-away copy. */
export function addSmokeCommand(program: Command, io: CliIo): void {
  program
    .command('smoke')
    .description(
      'run examples/smoke-test.mjs on a copy of the database, thrown away afterwards (safe while the server runs)',
    )
    .action(async () => {
      const path = databasePath(program)
      if (!existsSync(path)) throw new CliError(`no database at ${path}: pass --database (or set DATABASE_PATH)`)
      if (!(await smokeOnCopy(path, io))) throw new CliError('smoke test failed')
    })
}

/**
 * The smoke test on a copy: the file is opened read-only and copied with SQLite's online backup
 * (consistent while the server writes), so the original and its -wal are never written.
 */
async function smokeOnCopy(path: string, io: CliIo): Promise<boolean> {
  const dir = mkdtempSync(join(tmpdir(), 'facility-smoke-'))
  try {
    const copy = join(dir, 'copy.db')
    await copyDatabase(path, copy)
    io.out(`copied ${path} to a scratch file`)
    return await runSmokeTest(copy, io)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

async function copyDatabase(path: string, copy: string): Promise<void> {
  if (existsSync(`${path}-wal`)) {
    // A server (or the CLI) has it open: copy through SQLite's online backup, which reads a
    // consistent state while others write; a reader never writes to the -wal.
    const source = new BetterSqlite3(path, sqliteOptions({ readonly: true, fileMustExist: true }))
    try {
      await source.backup(copy)
    } finally {
      source.close()
    }
  } else {
    // Nobody has it open (a clean close folds the -wal into the file and removes it): the file
    // alone is the whole database. Opening it, even read-only, would leave a -wal and a -shm.
    copyFileSync(path, copy)
  }
}

/**
 * The example, as a user would import it. The single executable cannot import a file: there it is
 * part of the bundle, which is why this path is written out (the bundler follows it; it names the
 * file from the sources' cli/commands/, where only the executable's build reads it).
 */
async function loadExample(): Promise<Example> {
  if (insideExecutable()) return import('../../examples/smoke-test.mjs')
  return import(pathToFileURL(productPath('examples/smoke-test.mjs')).href)
}

/** Runs the example against the service on `copy`; a failing step is reported, not thrown. */
async function runSmokeTest(copy: string, io: CliIo): Promise<boolean> {
  const { build } = await import('../../index.js')
  const { smokeTest } = await loadExample()
  const service = await build({ database: copy })
  try {
    await smokeTest(service, io.out)
    io.out('smoke test passed')
    return true
  } catch (error) {
    io.out(`FAIL ${(error as Error).message}`)
    return false
  } finally {
    await service.close()
  }
}
