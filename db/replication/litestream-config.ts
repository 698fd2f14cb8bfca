import { execFileSync } from 'node:child_process'
import { accessSync, constants, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ConfigError } from '../../config.js'
import { makePrivateDirectory } from '../../lib/private-files.js'
import type { ReplicaTarget } from '../../lib/replica-url.js'
import { errorOfOutput } from './log-lines.js'

/**
 * Litestream's settings for one database and its one replica, written by us: Litestream runs with
 * `-config FILE -no-expand-env`, so the replica URL (it may hold an sftp password) never appears
 * in a process list, and a `$` in a password is not taken for an environment variable.
 */
export interface ReplicaSettings {
  target: ReplicaTarget
  /** Lines of REPLICA_CONFIG (`key: value`), added to the replica's entry. */
  extras: string[]
}

/**
 * How often Litestream copies the WAL to its shadow WAL (its default is 1 s). A commit reaches the
 * replica after this copy plus one sync interval (1 s), so at 100 ms the recovery point is about
 * the sync interval alone; the copy of an unchanged WAL costs a few system calls.
 */
export const MONITOR_INTERVAL_MS = 100
/** Litestream's default sync interval, unless REPLICA_CONFIG sets `sync-interval`. */
export const SYNC_INTERVAL_MS = 1000

// Keys REPLICA_URL already decides; in REPLICA_CONFIG too they would contradict it.
const KEYS_OF_THE_URL = new Set(['url', 'type'])
// Values under these keys are secrets: scrubbed from whatever Litestream prints.
const SECRET_KEYS = /(password|secret|access-key-id|token)/i
// Keys of Litestream 0.3's replica settings, named in a message about their line. Any other word
// before a `:` is refused unnamed: Litestream would ignore it silently (a typo loses the setting),
// and it may be the start of a secret pasted on a line of its own.
const NAMED_KEYS = new Set([
  ...KEYS_OF_THE_URL,
  ...['name', 'path', 'bucket', 'region', 'endpoint', 'force-path-style', 'skip-verify', 'access-key-id'],
  ...['secret-access-key', 'sync-interval', 'retention', 'retention-check-interval', 'snapshot-interval'],
  ...['validation-interval', 'host', 'user', 'password', 'key-path', 'account-name', 'account-key', 'age'],
])
const SETTABLE_KEYS = [...NAMED_KEYS].filter((key) => !KEYS_OF_THE_URL.has(key)).join(', ')

/** The Litestream binary: LITESTREAM_PATH, else the one the optional dependency brought. */
export function litestreamBinary(override: string): string {
  const binary = override !== '' ? resolve(override) : bundledBinary()
  try {
    accessSync(binary, constants.X_OK)
  } catch {
    throw new ConfigError(`LITESTREAM_PATH: ${binary} is not an executable file`)
  }
  return binary
}

function bundledBinary(): string {
  const pkg = `@flydotio/litestream-${process.platform}-${process.arch}`
  try {
    return join(dirname(createRequire(import.meta.url).resolve(`${pkg}/package.json`)), 'litestream')
  } catch {
    throw new ConfigError(
      `REPLICA_URL is set but Litestream is not installed for ${process.platform}-${process.arch} (no ${pkg}): ` +
        'install Litestream 0.3 and set LITESTREAM_PATH to its binary',
    )
  }
}

/**
 * REPLICA_CONFIG: `key: value` lines (and indented lines under a key), comments and blank lines.
 * It is not parsed as YAML here (Litestream does that): what would break the file around it,
 * contradict REPLICA_URL, or be ignored by Litestream (a key it does not know) is refused.
 */
export function readReplicaExtras(file: string): string[] {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    throw new ConfigError(`REPLICA_CONFIG: cannot read ${file} (${(error as NodeJS.ErrnoException).code})`)
  }
  const numbered = text
    .split(/\r?\n/)
    .map((line, i) => ({ line, number: i + 1 }))
    .filter(({ line }) => line.trim() !== '' && !line.trimStart().startsWith('#'))
  numbered.forEach(({ line, number }, i) => {
    // Named by its number and key only: a line's value may be a secret (secret-access-key: ...),
    // and a malformed line may be nothing but one.
    const key = /^\s*([A-Za-z][\w-]*)\s*:/.exec(line)?.[1]
    const where = `REPLICA_CONFIG: ${file}, line ${number}${key && NAMED_KEYS.has(key) ? ` (${key})` : ''}`
    if (line.includes('\t')) throw new ConfigError(`${where}: tabs are not allowed in YAML; indent with spaces`)
    if (i === 0 && line.startsWith(' ')) throw new ConfigError(`${where}: the first setting must not be indented`)
    if (line.startsWith(' ')) return
    if (!/^[A-Za-z][\w-]*:(\s|$)/.test(line))
      throw new ConfigError(`${where}: expected "key: value", e.g. "key-path: /etc/replica_key"`)
    if (key !== undefined && KEYS_OF_THE_URL.has(key))
      throw new ConfigError(`${where}: "${key}" comes from REPLICA_URL; remove it here`)
    if (key === undefined || !NAMED_KEYS.has(key))
      throw new ConfigError(`${where}: not one of Litestream 0.3's replica settings (${SETTABLE_KEYS})`)
  })
  return numbered.map(({ line }) => line)
}

/** The values of secret keys in REPLICA_CONFIG's lines. */
export function secretsOfExtras(extras: string[]): string[] {
  return extras.flatMap((line) => {
    const match = /^\s*([\w-]+):\s*(.+?)\s*$/.exec(line)
    if (!match || !SECRET_KEYS.test(match[1] as string)) return []
    return [(match[2] as string).replace(/^(["'])(.*)\1$/, '$2')]
  })
}

/** The text of Litestream's configuration (JSON strings are valid YAML double-quoted scalars). */
export function litestreamConfigText(databasePath: string, settings: ReplicaSettings): string {
  const { target } = settings
  const replica =
    target.kind === 'path' || target.kind === 'file'
      ? [
          'type: file',
          `path: ${JSON.stringify(target.kind === 'path' ? resolve(target.url) : fileURLToPath(target.url))}`,
        ]
      : [`url: ${JSON.stringify(target.url)}`]
  return [
    '# Written by facility-service from REPLICA_URL and REPLICA_CONFIG; it is rewritten at each start.',
    'logging:',
    '  type: json',
    'dbs:',
    `  - path: ${JSON.stringify(resolve(databasePath))}`,
    `    monitor-interval: ${MONITOR_INTERVAL_MS}ms`,
    '    replicas:',
    `      - ${replica[0]}`,
    ...[...replica.slice(1), ...settings.extras].map((line) => `        ${line}`),
    '',
  ].join('\n')
}

/** Writes the configuration to `file`, readable by this user only (it may hold a password). */
export function writeLitestreamConfig(file: string, databasePath: string, settings: ReplicaSettings): string {
  makePrivateDirectory(dirname(file)) // a first start: the database's folder is made here, 0700
  rmSync(file, { force: true })
  writeFileSync(file, litestreamConfigText(databasePath, settings), { mode: 0o600, flag: 'wx' })
  return file
}

/**
 * Has Litestream read the configuration: the YAML, the replica type, a bucket. `databases` only
 * reads it and lists the database; it reaches no replica. A refusal stops the start, as a bad
 * setting does, rather than leaving a ward to find out from /health that nothing is replicated.
 */
export function checkLitestreamConfig(binary: string, file: string, redact: (text: string) => string): void {
  try {
    execFileSync(binary, ['databases', '-config', file, '-no-expand-env'], { stdio: 'pipe', timeout: 30_000 })
  } catch (error) {
    const { stderr, stdout, message } = error as { stderr?: Buffer; stdout?: Buffer; message: string }
    const said = `${stderr ?? ''}${stdout ?? ''}`.trim() || message
    throw new ConfigError(
      `Litestream refuses the replica settings (REPLICA_URL, REPLICA_CONFIG): ${redact(errorOfOutput(said))}`,
    )
  }
}
