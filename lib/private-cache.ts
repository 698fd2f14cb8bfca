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
  chmodSync,
  closeSync,
  constants,
  existsSync,
  fstatSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs'
import { homedir } from 'node:os'
import { dirname, isAbsolute, join, resolve } from 'node:path'

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

const thisUser = () => process.getuid?.()
/** The sticky bit (S_ISVTX): in such a directory only an entry's owner may rename or remove it. */
const STICKY = 0o1000

/**
 * Refuses a directory that is not private to this user: a symbolic link, another owner, or any
 * access for group or others. Nothing is repaired silently: what was open may hold a planted file.
 */
export function checkPrivate(dir: string): void {
  const stat = lstatSync(dir)
  if (!stat.isDirectory()) throw new Error(`${dir} is not a directory (a symbolic link is refused)`)
  const uid = thisUser()
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

/** `/a/b/c` → `/`, `/a`, `/a/b`, `/a/b/c`. */
function prefixes(path: string): string[] {
  const all: string[] = []
  for (let dir = path; ; dir = dirname(dir)) {
    all.unshift(dir)
    if (dir === dirname(dir)) return all
  }
}

/**
 * Refuses a directory above the cache that someone else could change, as ssh's StrictModes does:
 * each must belong to root or to this user, and be writable by nobody else unless sticky (/tmp),
 * where others cannot rename or remove what is not theirs. Otherwise the checked directory could be
 * moved away, and another put in its place, between the check and the load. Both the path as given
 * and its real path (after symbolic links) are checked.
 */
export function checkAncestors(dir: string): void {
  const uid = thisUser()
  if (uid === undefined) return
  const checked = new Set([...prefixes(resolve(dir)), ...prefixes(realpathSync(dir))])
  for (const ancestor of checked) {
    const stat = statSync(ancestor)
    const rule =
      'every directory above the cache must belong to root or to this user, and be writable by no one else unless sticky like /tmp'
    if (stat.uid !== 0 && stat.uid !== uid)
      throw new Error(`${ancestor} belongs to uid ${stat.uid}, not to root or this user (uid ${uid}): ${rule}`)
    if ((stat.mode & 0o022) !== 0 && (stat.mode & STICKY) === 0)
      throw new Error(
        `${ancestor} has mode ${(stat.mode & 0o777).toString(8)}, writable by others and not sticky: ${rule}`,
      )
  }
}

/** How often a directory is tried when it cannot be made, before giving up (no endless loop). */
const MKDIR_TRIES = 3

/**
 * Makes each missing directory of `path`, one at a time, mode 0700 whatever the umask. Node's own
 * recursive mkdir loops forever where a directory can neither be made nor found (HOME=/proc);
 * here each is tried a bounded number of times, and the error says which one and why.
 */
function makeDirectories(path: string): void {
  const missing = prefixes(path).filter((dir) => !existsSync(dir))
  for (const dir of missing) {
    for (let tries = 1; ; tries++) {
      try {
        mkdirSync(dir, { mode: 0o700 })
        chmodSync(dir, 0o700)
        break
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code
        if (code === 'EEXIST' && lstatSync(dir).isDirectory()) break // made meanwhile: checked below
        if (tries >= MKDIR_TRIES)
          throw new Error(
            `cannot create the cache directory ${dir} (${code}): set CACHE_DIRECTORY or XDG_CACHE_HOME to a directory this user may create`,
          )
      }
    }
  }
}

/** A directory created with mode 0700 when missing (parents too), then checked to be private, ancestors included. */
export function privateDirectory(path: string): string {
  const full = resolve(path)
  // Nothing is made under a directory that fails the check; and all is checked again once made.
  const found = prefixes(full).filter((dir) => existsSync(dir))
  checkAncestors(found.at(-1) === full ? dirname(full) : (found.at(-1) ?? '/'))
  makeDirectories(full)
  checkAncestors(dirname(full))
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

/**
 * Opens the file once (never through a symbolic link), checks through that descriptor that it is
 * this user's, writable by no one else, and has the build's checksum, then hands `use` a path to
 * that very file, /proc/self/fd/N: what is loaded is the file that was checked, whatever is put at
 * `path` meanwhile.
 */
export function useVerifiedFile<T>(path: string, expected: string, use: (file: string) => T): T {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW)
  try {
    const stat = fstatSync(fd)
    const uid = thisUser()
    if (!stat.isFile() || (uid !== undefined && stat.uid !== uid) || (stat.mode & 0o022) !== 0)
      throw new Error(`${path} is not a file of this user's that only it may write; it was not loaded`)
    const found = sha256(readFileSync(fd))
    if (found !== expected)
      throw new Error(`${path} has checksum ${found}, not the build's ${expected}; it was not loaded`)
    return use(`/proc/self/fd/${fd}`)
  } finally {
    closeSync(fd)
  }
}
