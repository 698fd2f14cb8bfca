/**
 * The one directory the single executable writes to besides the database: where it puts what it
 * must have as files (the SQLite addon, which the operating system loads only from a file, and the
 * files the HTTP server serves from disk). Only this user can write there, never a shared /tmp
 * path, so nobody else can put or swap a file there between its check and its use.
 *
 * Where (docs/OPERATIONS.md): `$CACHE_DIRECTORY` (systemd's `CacheDirectory=`), else
 * `$XDG_CACHE_HOME/facility-service`, else `~/.cache/facility-service`.
 */
import { createHash, randomBytes } from 'node:crypto'
import {
  closeSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs'
import { homedir } from 'node:os'
import { isAbsolute, join } from 'node:path'

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex')
}

/** The directory's path from the environment; a relative one is refused (it would depend on the working directory). */
export function privateCachePath(env: NodeJS.ProcessEnv = process.env): string {
  // systemd sets CACHE_DIRECTORY to the unit's CacheDirectory= (several are separated by colons).
  const systemd = env.CACHE_DIRECTORY?.split(':')[0]
  const base = systemd || (env.XDG_CACHE_HOME ? join(env.XDG_CACHE_HOME, 'facility-service') : '')
  const path = base || join(env.HOME || homedir(), '.cache', 'facility-service')
  if (!isAbsolute(path)) {
    throw new Error(`the cache directory ${path} is not an absolute path: set CACHE_DIRECTORY or XDG_CACHE_HOME to one`)
  }
  return path
}

/**
 * Refuses a directory that is not private to this user: a symbolic link, another owner, or any
 * access for group or others. Nothing is repaired silently: what was open may hold a planted file.
 */
export function checkPrivate(dir: string): void {
  const stat = lstatSync(dir)
  if (!stat.isDirectory()) throw new Error(`${dir} is not a directory (a symbolic link is refused)`)
  const uid = process.getuid?.()
  if (uid !== undefined && stat.uid !== uid) {
    throw new Error(`${dir} belongs to uid ${stat.uid}, not to this user (uid ${uid}); remove it or fix its owner`)
  }
  const mode = stat.mode & 0o777
  if ((mode & 0o077) !== 0) {
    throw new Error(
      `${dir} has mode ${mode.toString(8)}; it must be 700 (only its owner may enter it): chmod 700 ${dir}`,
    )
  }
}

/** A directory created with mode 0700 when missing (parents too), then checked to be private. */
export function privateDirectory(path: string): string {
  mkdirSync(path, { recursive: true, mode: 0o700 })
  checkPrivate(path)
  return path
}

let cached: string | undefined

/** The private cache directory, created and checked once per process. */
export function privateCacheDir(): string {
  cached ??= privateDirectory(privateCachePath())
  return cached
}

function readIfPresent(path: string): Buffer | undefined {
  try {
    return readFileSync(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
}

/** Written under a temporary name, flushed, then renamed: a reader sees the old file or the whole new one. */
function writeAtomically(path: string, bytes: Uint8Array, mode: number): void {
  const temporary = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.partial`
  const fd = openSync(temporary, 'wx', mode)
  try {
    let written = 0
    while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  try {
    renameSync(temporary, path)
  } catch (error) {
    rmSync(temporary, { force: true })
    throw error
  }
}

/**
 * Makes the file at `path` hold exactly `bytes`, whose sha256 the build recorded: an existing file
 * with that checksum is kept (written once), anything else there is replaced. Bytes that do not
 * match the recorded checksum are never written.
 */
export function writeVerified(path: string, bytes: Uint8Array, expected: string, mode: number): void {
  const current = readIfPresent(path)
  if (current !== undefined && sha256(current) === expected) return
  if (sha256(bytes) !== expected) throw new Error(`the executable's copy of ${path} does not match its build checksum`)
  writeAtomically(path, bytes, mode)
}

/** Reads the file and checks its checksum: what is about to be loaded is what the build made. */
export function verifyFile(path: string, expected: string): void {
  const found = sha256(readFileSync(path))
  if (found !== expected)
    throw new Error(`${path} has checksum ${found}, not the build's ${expected}; it was not loaded`)
}
