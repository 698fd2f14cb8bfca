/**
 * Files and directories only the service's user may read, from their first byte, whatever the
 * umask: a file is created by this process with mode 0600 before anything (SQLite included) writes
 * to it, never made private afterwards; a directory is created 0700. An umask can only take bits
 * away, so neither is ever wider than that.
 */
import { randomBytes } from 'node:crypto'
import {
  chmodSync,
  closeSync,
  constants,
  fchmodSync,
  lstatSync,
  mkdirSync,
  openSync,
  realpathSync,
  type Stats,
} from 'node:fs'
import { dirname, resolve } from 'node:path'

const { O_CREAT, O_EXCL, O_NOFOLLOW, O_WRONLY } = constants

/**
 * Creates `path` as a new empty file of mode 0600 and returns its descriptor (write-only). It must
 * not exist yet, not even as a symbolic link (O_EXCL | O_NOFOLLOW): nothing planted there is
 * written through. The explicit fchmod restores the owner's bits a strict umask (0277) took away.
 */
export function openPrivateFile(path: string): number {
  const fd = openSync(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
  try {
    fchmodSync(fd, 0o600)
  } catch (error) {
    closeSync(fd)
    throw error
  }
  return fd
}

/** `openPrivateFile` for a file SQLite or another writer fills afterwards: created and closed. */
export function createPrivateFile(path: string): void {
  closeSync(openPrivateFile(path))
}

/**
 * Creates `path` (parents too) with mode 0700 where missing; an existing directory is left as it
 * is. Each one made is set to 0700 explicitly, as a strict umask (0277) would leave the owner
 * unable to write in it.
 */
export function makePrivateDirectory(path: string): void {
  const first = mkdirSync(path, { recursive: true, mode: 0o700 })
  if (first === undefined) return
  for (let made = resolve(path); ; made = dirname(made)) {
    chmodSync(made, 0o700)
    if (made === resolve(first) || dirname(made) === made) break
  }
}

/** A name beside `final` that nobody can guess in advance: `.<final name>.<random>.partial`. */
export function temporaryName(dir: string, finalName: string): string {
  return resolve(dir, `.${finalName}.${randomBytes(12).toString('hex')}.partial`)
}

const STICKY = 0o1000

function ownerName(uid: number): string {
  return uid === 0 ? 'root' : `uid ${uid}`
}

/** An ancestor is safe when only root or this user can change what it holds (ssh's StrictModes rule). */
function unsafeAncestor(path: string, stat: Stats, uid: number): string | null {
  if (stat.uid !== 0 && stat.uid !== uid) return `its parent ${path} belongs to ${ownerName(stat.uid)}`
  // In a sticky directory (/tmp) others may add entries but not move or remove this user's.
  if ((stat.mode & 0o022) !== 0 && (stat.mode & STICKY) === 0)
    return `its parent ${path} is writable by others (mode ${(stat.mode & 0o7777).toString(8)})`
  return null
}

/**
 * Why `dir` is no safe place for files nobody else may read or redirect, or null when it is: it
 * must be a real directory (not a symbolic link), this user's, writable by nobody else, and each
 * directory above it (as written and as resolved) only root's or this user's and not open to
 * others' writes, so that nobody can move it away or put another in its place between a check
 * and a use. A missing directory throws ENOENT.
 */
export function unsafeDirectoryReason(dir: string): string | null {
  const uid = process.getuid?.()
  const stat = lstatSync(dir)
  if (stat.isSymbolicLink()) return 'is a symbolic link; name the directory itself'
  if (!stat.isDirectory()) return 'is not a directory'
  if (uid === undefined) return null // no owners to compare (Windows)
  if (stat.uid !== uid) return `belongs to ${ownerName(stat.uid)}, not to the service's user (uid ${uid})`
  if ((stat.mode & 0o022) !== 0) return `is writable by others (mode ${(stat.mode & 0o777).toString(8)}); chmod 700 it`
  const chains = new Set([resolve(dir), realpathSync(dir)])
  for (const chain of chains) {
    for (let up = dirname(chain), above = ''; up !== above; above = up, up = dirname(up)) {
      const stat = lstatSync(up)
      // A link's own mode means nothing; the directory holding it is checked next, its target in the resolved chain.
      const reason = stat.isSymbolicLink() ? null : unsafeAncestor(up, stat, uid)
      if (reason !== null) return reason
    }
  }
  return null
}
