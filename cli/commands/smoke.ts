import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import BetterSqlite3 from 'better-sqlite3'
import type { Command } from 'commander'
import { PROJECT_ROOT } from '../../config.js'
import { databasePath } from '../database.js'
import { CliError } from '../errors.js'
import type { CliIo } from '../io.js'

type SmokeTest = (service: unknown, print: (line: string) => void) => Promise<void>

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
    const source = new BetterSqlite3(path, { readonly: true, fileMustExist: true })
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

/** Runs the example against the service on `copy`; a failing step is reported, not thrown. */
async function runSmokeTest(copy: string, io: CliIo): Promise<boolean> {
  const { build } = await import('../../index.js')
  const example = pathToFileURL(join(PROJECT_ROOT, 'examples', 'smoke-test.mjs')).href
  const { smokeTest } = (await import(example)) as { smokeTest: SmokeTest }
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
