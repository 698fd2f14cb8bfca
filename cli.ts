#!/usr/bin/env node
import { copyFileSync, existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import BetterSqlite3 from 'better-sqlite3'
import { Command, InvalidArgumentError, Option } from 'commander'
import { PROJECT_ROOT } from './config.js'
import { type Database, DEFAULT_BUSY_TIMEOUT_MS, openDatabase } from './db/connection.js'
import { createAuditLog } from './db/repositories/audit.js'
import { createBedRepository } from './db/repositories/beds.js'
import { createNotificationRepository, DIRECTIONS, type NewNotification } from './db/repositories/notifications.js'
import { createReadLog } from './db/repositories/read-log.js'
import { createTokenRepository, type TokenInfo } from './db/repositories/tokens.js'
import { FAULT_MESSAGES, faultOfError } from './db/storage-faults.js'
import { ROLES, type Role } from './domain/principal.js'
import { unstorableValue } from './lib/json-values.js'

export interface CliIo {
  out: (line: string) => void
  err: (line: string) => void
}

const AUDIT_KINDS = ['changes', 'reads'] as const

interface AuditOptions {
  kind: (typeof AUDIT_KINDS)[number]
  resource?: string
  id?: string
  facility?: string
  account?: string
  after?: number
  limit: number
}

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }

export function parseDuration(text: string): number {
  const match = /^(\d{1,6})([smhdw])$/.exec(text)
  if (!match) throw new InvalidArgumentError('use a number and a unit, e.g. 90s, 15m, 12h, 30d, 8w')
  return Number(match[1]) * (UNITS[match[2] as string] as number)
}

function nonEmpty(text: string): string {
  if (text.trim() === '') throw new InvalidArgumentError('must not be empty')
  return text
}

/** A bed, room or facility: what the API accepts for them (1 to 200 characters). */
function placeName(text: string): string {
  nonEmpty(text)
  if (text.length > 200) throw new InvalidArgumentError('must be at most 200 characters')
  return text
}

function jsonObject(text: string): Record<string, unknown> {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new InvalidArgumentError('must be valid JSON, e.g. \'{"queue":"A"}\'')
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new InvalidArgumentError('must be a JSON object, e.g. \'{"queue":"A"}\'')
  const problem = unstorableValue(value, 'meta')
  if (problem !== null) throw new InvalidArgumentError(problem)
  return value as Record<string, unknown>
}

function describeToken(t: TokenInfo): string {
  const iso = (ms: number | null) => (ms === null ? '-' : new Date(ms).toISOString())
  return [
    t.tokenId,
    t.account,
    t.role,
    t.facility ?? '*',
    iso(t.expiresAt),
    t.revokedAt ? 'revoked' : 'active',
    t.label ?? '',
  ].join('\t')
}

function milliseconds(text: string): number {
  if (!/^\d{1,6}$/.test(text)) throw new InvalidArgumentError('must be a whole number of milliseconds, at most 999999')
  return Number(text)
}

/**
 * The command-line tool. It works on the database file directly, also while the server runs
 * (SQLite WAL lets both in), and the server reads tokens on every request, so changes count at once.
 */
export function buildProgram(io: CliIo): Command {
  const program = new Command('facility-service')
    .description('administration of a facility-service database')
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
    .configureOutput({ writeOut: (s) => io.out(s.trimEnd()), writeErr: (s) => io.err(s.trimEnd()) })
    .exitOverride()

  /**
   * The service's database. Only `token create` may start a new file: anything else on a path
   * that does not exist is a mistyped --database, and would quietly act on an empty copy.
   */
  function openExisting({ mayCreate = false } = {}): Database {
    const path = program.opts<{ database: string }>().database
    if (!mayCreate && path !== ':memory:' && !path.startsWith('file:') && !existsSync(path)) {
      throw new CliError(
        `no database at ${path}: pass --database (or set DATABASE_PATH) to the service's file, or start the service once to create it`,
      )
    }
    return openDatabase(path, program.opts<{ busyTimeout: number }>().busyTimeout)
  }

  function withDatabase<T>(run: (db: Database) => T, options: { mayCreate?: boolean } = {}): T {
    const db = openExisting(options)
    try {
      return run(db)
    } finally {
      db.close()
    }
  }

  const token = program.command('token').description('create, list and revoke API tokens')

  token
    .command('create')
    .description('create a token and print it, alone, on the last line')
    .requiredOption('--account <uid>', 'the account uid the token acts as', nonEmpty)
    .addOption(new Option('--role <role>', 'what the token may do').choices(ROLES).makeOptionMandatory())
    .option('--facility <id>', 'bind the token to one facility (default: all facilities)', nonEmpty)
    .option('--label <text>', 'a note to recognise the token by')
    .option('--expires-in <duration>', 'lifetime, e.g. 12h, 30d (default: no expiry)', parseDuration)
    .action((opts: { account: string; role: Role; facility?: string; label?: string; expiresIn?: number }) => {
      withDatabase(
        (db) => {
          const now = Date.now()
          const { token: secret, info } = createTokenRepository(db).create(
            {
              account: opts.account,
              role: opts.role,
              facility: opts.facility ?? null,
              label: opts.label ?? null,
              expiresAt: opts.expiresIn === undefined ? null : now + opts.expiresIn,
            },
            now,
          )
          io.out(
            `created token ${info.tokenId} (account ${info.account}, role ${info.role}, facility ${info.facility ?? 'all'})`,
          )
          io.out(secret)
        },
        { mayCreate: true },
      )
    })

  token
    .command('list')
    .description('list tokens (never their secrets)')
    .option('--json', 'one JSON object per line')
    .action((opts: { json?: boolean }) => {
      withDatabase((db) => {
        const tokens = createTokenRepository(db).list()
        if (!opts.json) io.out(['id', 'account', 'role', 'facility', 'expires', 'state', 'label'].join('\t'))
        for (const t of tokens) io.out(opts.json ? JSON.stringify(t) : describeToken(t))
      })
    })

  token
    .command('revoke')
    .description('revoke a token; the running server refuses it from the next request on')
    .argument('<id>', 'the token id (first column of `token list`)')
    .action((id: string) => {
      withDatabase((db) => {
        if (!createTokenRepository(db).revoke(id)) throw new CliError(`no active token with id ${id}`)
        io.out(`revoked token ${id}`)
      })
    })

  program
    .command('backup')
    .description('copy the database to FILE, consistently, also while the server serves writes')
    .argument('<file>', 'where to write the copy (must not exist yet)')
    .action(async (file: string) => {
      if (existsSync(file)) throw new CliError(`${file} exists already; choose a new file name`)
      const db = openExisting()
      try {
        // SQLite's online backup API. Copied in one step: a backup in small steps restarts
        // whenever the server writes meanwhile, and under steady writes would never finish.
        // Under WAL the server keeps writing while this snapshot is read.
        const { totalPages } = await db.backup(file, { progress: () => Number.MAX_SAFE_INTEGER })
        io.out(`backed up ${totalPages} pages to ${file}`)
      } catch (error) {
        // A half-written copy is no backup: it is removed, so it is never mistaken for one.
        for (const part of [file, `${file}-journal`, `${file}-wal`]) rmSync(part, { force: true })
        if (faultOfError(error) === 'full')
          throw new CliError(
            `no space left for the backup at ${file} (${codeOf(error)}); nothing was written: free space or choose another disk`,
          )
        throw error
      } finally {
        db.close()
      }
    })

  program
    .command('audit')
    .description(
      'print audit log entries (changes, or with --kind reads the read log), oldest first, one JSON object per line',
    )
    .addOption(
      new Option('--kind <kind>', 'changes or reads (AUDIT_READS=true)').choices(AUDIT_KINDS).default('changes'),
    )
    .option('--resource <name>', 'e.g. ward-occupants, form-templates')
    .option('--id <recordId>', 'one record')
    .option('--facility <id>', 'one facility')
    .option('--account <uid>', 'one account')
    .option('--after <seq>', 'entries after this sequence number', (v) => Number.parseInt(v, 10))
    .option('--limit <n>', 'at most this many', (v) => Number.parseInt(v, 10), 1000)
    .action((opts: AuditOptions) => {
      withDatabase((db) => {
        const filter = {
          resource: opts.resource,
          recordId: opts.id,
          facility: opts.facility,
          account: opts.account,
          afterSeq: opts.after,
          limit: opts.limit,
        }
        const entries =
          opts.kind === 'reads'
            ? createReadLog(db)
                .list(filter)
                .map((e) => ({ kind: 'read', ...e }))
            : createAuditLog(db)
                .list(filter)
                .map((e) => ({ kind: 'change', ...e }))
        for (const entry of entries) io.out(JSON.stringify(entry))
      })
    })

  program
    .command('notify')
    .description('post a notification and print its id; without --to it is for everyone of the facility')
    .requiredOption('--code <code>', 'kind of notification, e.g. new-queue-item', nonEmpty)
    .requiredOption('--type <type>', 'category, e.g. warehouse', nonEmpty)
    .requiredOption('--title <text>', 'the headline', nonEmpty)
    .requiredOption('--body <text>', 'the message', nonEmpty)
    .option('--facility <id>', 'only for this facility (default: every facility)', nonEmpty)
    .option('--to <uid...>', 'only for these accounts (default: everyone)')
    .addOption(new Option('--direction <direction>', 'inbound or outbound').choices(DIRECTIONS))
    .option('--meta <json>', 'a JSON object for apps', jsonObject)
    .action((opts: Omit<NewNotification, 'facility'> & { facility?: string }) => {
      if (opts.to?.some((uid) => uid.trim() === '')) throw new CliError('--to: account uids must not be empty')
      withDatabase((db) => {
        io.out(createNotificationRepository(db).create({ ...opts, facility: opts.facility ?? null }).id)
      })
    })

  // Beds that were never occupied, for the bed board (docs/BOARD.md); beds with occupants show anyway.
  const beds = program.command('beds').description('list the beds of a ward that have never been occupied too')
  const facilityOption = () =>
    new Option('--facility <id>', 'the facility (default: the records without one)').argParser(placeName)
  beds
    .command('add')
    .description('list a bed (or change its room); it shows on the board, free, from the next load')
    .requiredOption('--bed <bed>', 'the bed id, as occupants name it', placeName)
    .option('--room <room>', 'its room', placeName)
    .addOption(facilityOption())
    .action((opts: { bed: string; room?: string; facility?: string }) => {
      const added = withDatabase((db) => createBedRepository(db).add({ ...opts, facility: opts.facility ?? null }))
      io.out(added ? `listed bed ${opts.bed}` : `bed ${opts.bed} was listed already; room updated`)
    })
  beds
    .command('remove')
    .description('take a bed off the list (a bed that has had occupants stays on the board)')
    .requiredOption('--bed <bed>', 'the bed id', placeName)
    .addOption(facilityOption())
    .action((opts: { bed: string; facility?: string }) => {
      const removed = withDatabase((db) => createBedRepository(db).remove(opts.facility ?? null, opts.bed))
      if (!removed) throw new CliError(`bed ${opts.bed} is not listed${opts.facility ? ` in ${opts.facility}` : ''}`)
      io.out(`removed bed ${opts.bed}`)
    })
  beds
    .command('list')
    .description('the listed beds: facility, room, bed (tab-separated; * for no facility)')
    .addOption(facilityOption())
    .action((opts: { facility?: string }) => {
      for (const bed of withDatabase((db) => createBedRepository(db).kept())) {
        if (opts.facility === undefined || bed.facility === opts.facility)
          io.out([bed.facility ?? '*', bed.room ?? '-', bed.bed].join('\t'))
      }
    })

  program
    .command('smoke')
    .description(
      'run examples/smoke-test.mjs on a copy of the database, thrown away afterwards (safe while the server runs)',
    )
    .action(async () => {
      const path = program.opts<{ database: string }>().database
      if (!existsSync(path)) throw new CliError(`no database at ${path}: pass --database (or set DATABASE_PATH)`)
      if (!(await smokeOnCopy(path, io))) throw new CliError('smoke test failed')
    })

  return program
}

export class CliError extends Error {}

function codeOf(error: unknown): string {
  return String((error as { code?: unknown }).code ?? 'error')
}

/** Exit status for a database locked by another process past the wait (sysexits' EX_TEMPFAIL): retry. */
export const EXIT_BUSY = 75

/**
 * The smoke test on a copy: the file is opened read-only and copied with SQLite's online backup
 * (consistent while the server writes), so the original and its -wal are never written.
 */
async function smokeOnCopy(path: string, io: CliIo): Promise<boolean> {
  const dir = mkdtempSync(join(tmpdir(), 'facility-smoke-'))
  try {
    const copy = join(dir, 'copy.db')
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
    io.out(`copied ${path} to a scratch file`)
    const { build } = await import('./index.js')
    const example = pathToFileURL(join(PROJECT_ROOT, 'examples', 'smoke-test.mjs')).href
    const { smokeTest } = (await import(example)) as {
      smokeTest: (service: unknown, print: (line: string) => void) => Promise<void>
    }
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
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Runs the tool; resolves to the process exit code. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  try {
    await buildProgram(io).parseAsync(argv, { from: 'user' })
    return 0
  } catch (error) {
    const e = error as { code?: string; exitCode?: number; message?: string }
    if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version') return 0
    if (e.code?.startsWith('commander.')) return e.exitCode ?? 2
    const fault = error instanceof CliError ? null : faultOfError(error)
    if (fault !== null) {
      // The same words the server answers with, plus the code SQLite gave.
      io.err(`facility-service: ${FAULT_MESSAGES[fault]} (${codeOf(error)}: ${e.message})`)
      return fault === 'busy' ? EXIT_BUSY : 1
    }
    io.err(`facility-service: ${e.message ?? String(error)}`)
    return 1
  }
}

function isMain(): boolean {
  const entry = process.argv[1]
  return entry !== undefined && realpathSync(entry) === fileURLToPath(import.meta.url)
}

if (isMain()) {
  const io: CliIo = { out: (l) => process.stdout.write(`${l}\n`), err: (l) => process.stderr.write(`${l}\n`) }
  process.exitCode = await runCli(process.argv.slice(2), io)
}
