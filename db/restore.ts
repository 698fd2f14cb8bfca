import { spawnSync } from 'node:child_process'
import {
  chmodSync,
  closeSync,
  existsSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, dirname, join, resolve } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import { parseReplicaUrl, type ReplicaTarget } from '../lib/replica-url.js'
import { verifyBackup } from './backups.js'
import { sqliteOptions } from './connection-options.js'
import { databaseFiles, openersOf } from './open-files.js'
import {
  litestreamBinary,
  readReplicaExtras,
  secretsOfExtras,
  writeLitestreamConfig,
} from './replication/litestream-config.js'
import { errorOfOutput, redactor, secretsOfEnv } from './replication/log-lines.js'

/** A restore refused or failed; its message says why and what to do. Nothing was written to `to`. */
export class RestoreError extends Error {}

export interface RestoreOptions {
  /** A replica (REPLICA_URL's forms: a directory, file://, sftp://, s3://) or a backup file. */
  from: string
  to: string
  /** RFC 3339: the replica as it was then (replicas only). */
  timestamp: string | null
  /** REPLICA_CONFIG: the replica's settings the URL cannot carry (sftp key, S3 endpoint). */
  replicaConfig: string
  litestreamPath: string
  env: NodeJS.ProcessEnv
}

export interface RestoreResult {
  /** `from` as it may be shown (a password hidden). */
  from: string
  to: string
  kind: 'replica' | 'backup'
  wardOccupants: number
  /** The newest change in the audit log: the restored database is the ward as of then. */
  newestChangeAt: number | null
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/

/**
 * Restores the database from a replica (Litestream) or a backup file (a copy) into `to`, which
 * must be free: no file there, no -wal or -shm a database left, no process holding one open (nor
 * one that was started on `to` and whose files were moved away). The copy is made in a private
 * folder beside `to`, checked with verifyBackup, made readable by its user only, and only then
 * linked to `to`: a failed restore leaves nothing behind.
 */
export function restoreDatabase(opts: RestoreOptions): RestoreResult {
  const to = resolve(opts.to)
  refuseTarget(to)
  const source = sourceOf(opts.from)
  if (opts.timestamp !== null && source.kind === 'backup')
    throw new RestoreError('--timestamp applies to replicas; a backup file is one moment already')
  if (opts.timestamp !== null && !RFC3339.test(opts.timestamp))
    throw new RestoreError(`--timestamp ${opts.timestamp}: expected an RFC 3339 time, e.g. 2026-11-25T20:46:19Z`)
  privateFolder(dirname(to))
  // A folder of its own beside `to` (mkdtemp: 0700), so no byte of the copy, nor its -wal or -shm
  // while it is checked, is ever open to others, whatever mode Litestream or a copy gives a file.
  const work = mkdtempSync(join(dirname(to), `.${basename(to)}.restoring-`))
  const partial = join(work, basename(to))
  try {
    if (source.kind === 'backup') copyPrivately(source.file, partial)
    else restoreReplica(source.target, partial, to, opts)
    const check = verifyBackup(partial)
    if (!check.ok)
      throw new RestoreError(`the restored copy failed its check (${check.message}); ${to} was not written`)
    const summary = summarize(partial)
    settle(partial, to)
    return { from: source.shown, to, kind: source.kind, ...summary }
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

/**
 * The target's folder, made when missing with mode 0700 (each folder made: the umask of whoever
 * runs `restore` is not the service's rule), as systemd's StateDirectory= makes it. A folder that
 * exists is the operator's, and left as it is.
 */
function privateFolder(dir: string): void {
  const first = mkdirSync(dir, { recursive: true, mode: 0o700 })
  if (first === undefined) return
  for (let made = dir; ; made = dirname(made)) {
    chmodSync(made, 0o700)
    if (made === first || made === dirname(made)) return
  }
}

/** A copy created 0600 (by this process, not copied from the source's mode) and flushed. */
function copyPrivately(from: string, to: string): void {
  const input = openSync(from, 'r')
  try {
    const output = openSync(to, 'wx', 0o600)
    try {
      const chunk = Buffer.allocUnsafe(1 << 20)
      for (let read = readSync(input, chunk); read > 0; read = readSync(input, chunk)) {
        for (let written = 0; written < read; ) written += writeSync(output, chunk, written, read - written)
      }
      fsyncSync(output)
    } finally {
      closeSync(output)
    }
  } finally {
    closeSync(input)
  }
}

/** Refuses a target where a database is, was (its -wal, -shm), or is still held open, also elsewhere. */
export function refuseTarget(to: string): void {
  const opener = openersOf(to)[0]
  const stop = `stop it (systemctl stop facility-service, or kill ${opener?.pid}), then restore`
  if (opener?.holding === 'deleted')
    throw new RestoreError(
      `process ${opener.pid} (${opener.command}) still has a deleted database at ${to} open: a server running on ` +
        `files removed under it, whose writes from now on are lost with it. ${capitalized(stop)}`,
    )
  if (opener?.holding === 'moved')
    throw new RestoreError(
      `process ${opener.pid} (${opener.command}) was started on ${to} and still has that database open where it ` +
        `was moved, ${opener.file}: a server that keeps taking writes there, beside the restored one. ${capitalized(stop)}`,
    )
  if (opener) throw new RestoreError(`${to} is open by process ${opener.pid} (${opener.command}): ${stop}`)
  const present = databaseFiles(to).find((file) => existsSync(file))
  if (present)
    throw new RestoreError(
      `${present} exists: a restore never writes over a database (nor beside the -wal or -shm of one); ` +
        'move it aside, or restore to another path',
    )
}

const capitalized = (text: string) => text.charAt(0).toUpperCase() + text.slice(1)

type Source =
  | { kind: 'replica'; target: ReplicaTarget; shown: string }
  | { kind: 'backup'; file: string; shown: string }

function sourceOf(from: string): Source {
  if (from.includes('://')) {
    try {
      const target = parseReplicaUrl(from)
      return { kind: 'replica', target, shown: target.shown }
    } catch (error) {
      throw new RestoreError(`--from: ${(error as Error).message}`)
    }
  }
  if (!existsSync(from)) throw new RestoreError(`--from ${from}: no such backup file or replica directory`)
  if (statSync(from).isDirectory())
    return { kind: 'replica', target: { kind: 'path', url: from, shown: from, secrets: [] }, shown: from }
  // An empty -wal is what a reader leaves (`backup verify`); one with commits, or a process holding
  // the file, is a live database, whose file alone lacks what its WAL holds.
  const wal = `${from}-wal`
  if (existsSync(wal) && statSync(wal).size > 0)
    throw new RestoreError(
      `--from ${from} has a -wal beside it: a live database, not a backup; take one with \`facility-service backup\``,
    )
  const holder = openersOf(from).find((opener) => opener.holding === 'open')
  if (holder)
    throw new RestoreError(
      `--from ${from} is open by process ${holder.pid} (${holder.command}): a live database, not a backup; ` +
        'take one with `facility-service backup`',
    )
  return { kind: 'backup', file: from, shown: from }
}

/** `litestream restore` with a configuration of our own, so a password is never in a process list. */
function restoreReplica(target: ReplicaTarget, partial: string, to: string, opts: RestoreOptions): void {
  const binary = litestreamBinary(opts.litestreamPath)
  const extras = opts.replicaConfig === '' ? [] : readReplicaExtras(opts.replicaConfig)
  const redact = redactor([...target.secrets, ...secretsOfExtras(extras), ...secretsOfEnv(opts.env)])
  const dir = mkdtempSync(join(tmpdir(), 'facility-restore-'))
  try {
    const config = writeLitestreamConfig(join(dir, 'litestream.yml'), to, { target, extras })
    const timestamp = opts.timestamp === null ? [] : ['-timestamp', opts.timestamp]
    const args = ['restore', '-config', config, '-no-expand-env', '-o', partial, ...timestamp, to]
    const run = spawnSync(binary, args, { env: opts.env, encoding: 'utf8' })
    if (run.status === 0) return
    const said = redact(errorOfOutput(`${run.stdout ?? ''}\n${run.stderr ?? ''}`) || String(run.error ?? ''))
    if (/no matching backups/.test(said))
      throw new RestoreError(
        `no backup in the replica ${target.shown}${opts.timestamp ? ` from before ${opts.timestamp}` : ''} (Litestream: ${said})`,
      )
    throw new RestoreError(`Litestream could not restore from ${target.shown}: ${said}`)
  } finally {
    // Litestream's temporary file (and its empty -wal and -shm) is in the restore's folder, removed with it.
    rmSync(dir, { recursive: true, force: true })
  }
}

function summarize(file: string): Pick<RestoreResult, 'wardOccupants' | 'newestChangeAt'> {
  // sqliteOptions: inside the single executable the addon comes from it, never from a path.
  const db = new BetterSqlite3(file, sqliteOptions({ readonly: true, fileMustExist: true }))
  try {
    return {
      wardOccupants: db.prepare('SELECT count(*) FROM ward_occupants').pluck().get() as number,
      newestChangeAt: db.prepare('SELECT max(at) FROM audit_log').pluck().get() as number | null,
    }
  } finally {
    db.close()
  }
}

/** Private, on disk, then under its name: the link is the moment the database appears. */
function settle(partial: string, to: string): void {
  const wal = `${partial}-wal`
  if (existsSync(wal) && statSync(wal).size > 0)
    throw new RestoreError(`the restored copy has an unexpected write-ahead log (${wal}); ${to} was not written`)
  chmodSync(partial, 0o600)
  const fd = openSync(partial, 'r')
  fsyncSync(fd)
  closeSync(fd)
  // A link, not a rename: it fails if anything appeared at `to` meanwhile, where a rename would replace it.
  linkSync(partial, to)
  const dir = openSync(dirname(to), 'r')
  fsyncSync(dir)
  closeSync(dir)
}
