import { existsSync, readdirSync, readFileSync, readlinkSync, realpathSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'

export interface Opener {
  pid: number
  /** The program (argv[0] without its folder). */
  command: string
  file: string
  /** The file was removed while the process kept it open. */
  deleted: boolean
}

const DELETED = ' (deleted)'

/** The database file and the files SQLite keeps beside it. */
export function databaseFiles(path: string): string[] {
  return [path, `${path}-wal`, `${path}-shm`, `${path}-journal`]
}

/**
 * The processes that have the database at `path` (or its -wal, -shm) open, found the way `fuser`
 * finds them: through /proc/PID/fd. Unlike a lock probe (BEGIN IMMEDIATE finds only a process that
 * is writing at that moment), this finds an idle server too, and a server still running on files
 * deleted under it, which no lock on a new file at that path could reveal. Linux only: elsewhere,
 * and for other users' processes without the right to read them, nothing is found.
 */
export function openersOf(path: string): Opener[] {
  if (!existsSync('/proc/self/fd')) return []
  const wanted = new Set(databaseFiles(canonical(path)).concat(databaseFiles(resolve(path))))
  const found: Opener[] = []
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry)
    if (!Number.isInteger(pid) || pid === process.pid) continue
    for (const link of linksOf(pid)) {
      const deleted = link.endsWith(DELETED)
      const file = deleted ? link.slice(0, -DELETED.length) : link
      if (wanted.has(file)) found.push({ pid, command: commandOf(pid), file, deleted })
    }
  }
  return found
}

/** The path with its folder's symbolic links resolved, as /proc shows open files. */
function canonical(path: string): string {
  const dir = dirname(resolve(path))
  try {
    return join(realpathSync(dir), basename(path))
  } catch {
    return resolve(path)
  }
}

function linksOf(pid: number): string[] {
  let fds: string[]
  try {
    fds = readdirSync(`/proc/${pid}/fd`)
  } catch {
    return [] // gone meanwhile, or not ours to read
  }
  const links: string[] = []
  for (const fd of fds) {
    try {
      links.push(readlinkSync(`/proc/${pid}/fd/${fd}`))
    } catch {
      // closed meanwhile
    }
  }
  return links
}

/** The program's name: argv[0] without its folder (comm can be a thread's name, "MainThread" in Node 24). */
function commandOf(pid: number): string {
  try {
    return basename(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? '') || '?'
  } catch {
    return '?'
  }
}
