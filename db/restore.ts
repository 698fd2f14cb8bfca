import { spawnSync } from 'node:child_process'
import {
  chmodSync,
  closeSync,
  constants,
  copyFileSync,
  existsSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  rmSync,
  statSync,
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
 * must be free: no file there, no -wal or -shm a database left, no process holding one open.
 * The copy is made under a temporary name beside `to`, checked with verifyBackup, made readable
 * by its user only, and only then renamed to `to`: a failed restore leaves nothing behind.
 */
export function restoreDatabase(opts: RestoreOptions): RestoreResult {
  const to = resolve(opts.to)
  refuseTarget(to)
  const source = sourceOf(opts.from)
  if (opts.timestamp !== null && source.kind === 'backup')
    throw new RestoreError('--timestamp applies to replicas; a backup file is one moment already')
  if (opts.timestamp !== null && !RFC3339.test(opts.timestamp))
    throw new RestoreError(`--timestamp ${opts.timestamp}: expected an RFC 3339 time, e.g. 2026-11-25T20:46:19Z`)
  mkdirSync(dirname(to), { recursive: true })
  const partial = join(dirname(to), `.${basename(to)}.restoring`)
  removeDatabase(partial)
  try {
    if (source.kind === 'backup') copyFileSync(source.file, partial, constants.COPYFILE_EXCL)
    else restoreReplica(source.target, partial, to, opts)
    const check = verifyBackup(partial)
    if (!check.ok)
      throw new RestoreError(`the restored copy failed its check (${check.message}); ${to} was not written`)
    const summary = summarize(partial)
    settle(partial, to)
    return { from: source.shown, to, kind: source.kind, ...summary }
  } finally {
    removeDatabase(partial)
  }
}

/** Refuses a target where a database is, was (its -wal, -shm), or is still held open. */
export function refuseTarget(to: string): void {
  const opener = openersOf(to)[0]
  if (opener?.deleted)
    throw new RestoreError(
      `process ${opener.pid} (${opener.command}) still has a deleted database at ${to} open: a server running on ` +
        'files removed under it, whose writes from now on are lost with it. Stop it, then restore',
    )
  if (opener)
    throw new RestoreError(`${to} is open by process ${opener.pid} (${opener.command}): stop the server, then restore`)
  const present = databaseFiles(to).find((file) => existsSync(file))
  if (present)
    throw new RestoreError(
      `${present} exists: a restore never writes over a database (nor beside the -wal or -shm of one); ` +
        'move it aside, or restore to another path',
    )
}

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
  if (existsSync(`${from}-wal`))
    throw new RestoreError(
      `--from ${from} has a -wal beside it: a live database, not a backup; take one with \`facility-service backup\``,
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
    rmSync(dir, { recursive: true, force: true })
    // Litestream leaves the (empty) -wal and -shm of its own temporary file.
    removeDatabase(`${partial}.tmp`)
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
  rmSync(partial)
  const dir = openSync(dirname(to), 'r')
  fsyncSync(dir)
  closeSync(dir)
}

function removeDatabase(path: string): void {
  for (const file of databaseFiles(path)) rmSync(file, { force: true })
}
