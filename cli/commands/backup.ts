import { existsSync, rmSync } from 'node:fs'
import type { Command } from 'commander'
import { removeSideFiles, sealBackup, verifyBackup } from '../../db/backups.js'
import { faultOfError } from '../../db/storage-faults.js'
import { createPrivateFile } from '../../lib/private-files.js'
import { openExisting } from '../database.js'
import { CliError, codeOf } from '../errors.js'
import type { CliIo } from '../io.js'

/** `backup <file>`: a consistent copy while the server goes on serving writes. */
export function addBackupCommand(program: Command, io: CliIo): void {
  const backup = program
    .command('backup')
    .description('copy the database to FILE, consistently, also while the server serves writes')
    .argument('<file>', 'where to write the copy (must not exist yet)')
    .action(async (file: string) => {
      // Said first, before the database is looked for; the exclusive creation below is what holds.
      if (existsSync(file)) throw new CliError(`${file} exists already; choose a new file name`)
      const db = openExisting(program)
      try {
        createCopyFile(file)
      } catch (error) {
        db.close()
        throw error
      }
      try {
        // SQLite's online backup API. Copied in one step: a backup in small steps restarts
        // whenever the server writes meanwhile, and under steady writes would never finish.
        // Under WAL the server keeps writing while this snapshot is read.
        const { totalPages } = await db.backup(file, { progress: () => Number.MAX_SAFE_INTEGER })
        sealBackup(file)
        io.out(`backed up ${totalPages} pages to ${file}`)
      } catch (error) {
        removeHalfWritten(file)
        if (faultOfError(error) === 'full')
          throw new CliError(
            `no space left for the backup at ${file} (${codeOf(error)}); nothing was written: free space or choose another disk`,
          )
        throw error
      } finally {
        db.close()
      }
    })
  backup
    .command('verify')
    .description("check that FILE is a sound copy of the service's database (SQLite's integrity check)")
    .argument('<file>', 'a backup (taken by `backup`, by BACKUP_DIR, or restored)')
    .action((file: string) => {
      if (!existsSync(file)) throw new CliError(`${file} does not exist`)
      const check = verifyBackup(file)
      if (!check.ok) throw new CliError(`${file} is not a sound backup: ${check.message}`)
      io.out(`${file}: ok`)
    })
}

/**
 * The copy's file, made here 0600 before SQLite writes a byte into it (SQLite would create it 0644
 * less the umask). It must be new: an existing file, or a link planted at that name, is refused
 * rather than written through.
 */
function createCopyFile(file: string): void {
  try {
    createPrivateFile(file)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'EEXIST' || code === 'ELOOP') throw new CliError(`${file} exists already; choose a new file name`)
    throw new CliError(`cannot create ${file} (${code}): choose a directory this user can write`)
  }
}

/** A half-written copy is no backup: it is removed, so it is never mistaken for one. */
function removeHalfWritten(file: string): void {
  rmSync(file, { force: true })
  removeSideFiles(file)
}
