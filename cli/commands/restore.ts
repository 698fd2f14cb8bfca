import { type Command, Option } from 'commander'
import { RestoreError, restoreDatabase } from '../../db/restore.js'
import { CliError } from '../errors.js'
import type { CliIo } from '../io.js'

interface RestoreFlags {
  from: string
  to: string
  timestamp?: string
  replicaConfig: string
  litestream: string
}

/**
 * `restore --from <replica | backup> --to PATH`: the first of the two commands on a standby
 * (docs/OPERATIONS.md, "Standby and restore"); the second starts the server on PATH.
 */
export function addRestoreCommand(program: Command, io: CliIo): void {
  program
    .command('restore')
    .description('restore the database from a replica (REPLICA_URL) or a backup file into a new file, and check it')
    .requiredOption(
      '--from <source>',
      'a replica: a directory, file:///..., sftp://... or s3://... URL; or a backup file',
    )
    .requiredOption('--to <path>', 'the database file to make (must not exist, nor be open)')
    .option('--timestamp <time>', 'the replica as it was at this RFC 3339 time, e.g. 2026-11-25T20:46:19Z')
    .addOption(
      new Option('--replica-config <file>', "the replica's settings the URL cannot carry (sftp key, S3 endpoint)")
        .env('REPLICA_CONFIG')
        .default(''),
    )
    .addOption(new Option('--litestream <path>', 'the litestream binary').env('LITESTREAM_PATH').default(''))
    .action((flags: RestoreFlags) => {
      let result: ReturnType<typeof restoreDatabase>
      try {
        result = restoreDatabase({
          from: flags.from,
          to: flags.to,
          timestamp: flags.timestamp ?? null,
          replicaConfig: flags.replicaConfig,
          litestreamPath: flags.litestream,
          env: process.env,
        })
      } catch (error) {
        if (error instanceof RestoreError) throw new CliError(error.message)
        throw error
      }
      const newest = result.newestChangeAt === null ? 'none' : new Date(result.newestChangeAt).toISOString()
      io.out(`restored ${result.from} to ${result.to}: integrity ok, ${result.wardOccupants} ward occupants`)
      io.out(`newest change in it: ${newest}`)
      io.out(`start the server on it: DATABASE_PATH=${result.to}`)
    })
}
