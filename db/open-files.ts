import { existsSync, readdirSync, readFileSync, readlinkSync, realpathSync } from 'node:fs'
import { basename, dirname, isAbsolute, join, resolve } from 'node:path'

/**
 * How a process holds the database of a path: `open` at that path; `deleted`, removed under it;
 * `moved`, elsewhere now (its folder renamed, `mv data data.before`) while the process was told
 * that path and keeps writing to the file where it went.
 */
export type Holding = 'open' | 'deleted' | 'moved'

export interface Opener {
  pid: number
  /** The program (argv[0] without its folder). */
  command: string
  /** The file as /proc shows it now (for `moved`, where it went). */
  file: string
  holding: Holding
}

const DELETED = ' (deleted)'
/** The server's and the CLI's default (config.ts), relative to the working directory. */
const DEFAULT_DATABASE = './data/facility.db'

/** The database file and the files SQLite keeps beside it. */
export function databaseFiles(path: string): string[] {
  return [path, `${path}-wal`, `${path}-shm`, `${path}-journal`]
}

/**
 * The processes that hold the database at `path` (or its -wal, -shm), found the way `fuser` finds
 * them: through /proc/PID/fd. Unlike a lock probe (BEGIN IMMEDIATE finds only a process that is
 * writing at that moment), this finds an idle server too, a server still running on files deleted
 * under it, and one whose folder was moved away while it ran: no lock on a new file at that path
 * could reveal those. A move is recognised by what the process was told (DATABASE_PATH in its
 * environment, `--database` on its command line, else the default ./data/facility.db) naming
 * `path`, while the file of that name it holds is elsewhere. Linux only: elsewhere, and for other
 * users' processes without the right to read them (run as root or as the service's user), nothing
 * is found.
 */
export function openersOf(path: string): Opener[] {
  if (!existsSync('/proc/self/fd')) return []
  const targets = [canonical(path), resolve(path)]
  const wanted = new Set(targets.flatMap(databaseFiles))
  const names = new Set(databaseFiles(basename(path)))
  const found: Opener[] = []
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry)
    if (!Number.isInteger(pid) || pid === process.pid) continue
    let told: boolean | undefined
    for (const link of linksOf(pid)) {
      const deleted = link.endsWith(DELETED)
      const file = deleted ? link.slice(0, -DELETED.length) : link
      if (wanted.has(file)) {
        found.push({ pid, command: commandOf(pid), file, holding: deleted ? 'deleted' : 'open' })
        continue
      }
      if (!names.has(basename(file))) continue
      // Read only for a process holding a file of the database's name: most hold none.
      told ??= toldPaths(pid).some((p) => targets.includes(p))
      if (told) found.push({ pid, command: commandOf(pid), file, holding: deleted ? 'deleted' : 'moved' })
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

/**
 * The database paths the process was started with, made absolute: against its working directory
 * as it is now, and as it was (PWD, which a shell sets): a relative path under a moved folder
 * named the old place.
 */
function toldPaths(pid: number): string[] {
  const env = nulSeparated(`/proc/${pid}/environ`)
  const args = nulSeparated(`/proc/${pid}/cmdline`)
  const fromEnv = env.find((v) => v.startsWith('DATABASE_PATH='))?.slice('DATABASE_PATH='.length)
  const flag = args.findIndex((a) => a === '--database' || a.startsWith('--database='))
  const fromArgs = flag === -1 ? undefined : (args[flag]?.split('=').slice(1).join('=') ?? '') || args[flag + 1]
  const told = fromArgs || fromEnv || DEFAULT_DATABASE
  if (isAbsolute(told)) return [told]
  const dirs = [env.find((v) => v.startsWith('PWD='))?.slice(4), readLink(`/proc/${pid}/cwd`)]
  return dirs.filter((d): d is string => d !== undefined && isAbsolute(d)).map((d) => resolve(d, told))
}

function nulSeparated(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').split('\0')
  } catch {
    return []
  }
}

function readLink(link: string): string | undefined {
  try {
    return readlinkSync(link)
  } catch {
    return undefined
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
    const link = readLink(`/proc/${pid}/fd/${fd}`) // undefined: closed meanwhile
    if (link !== undefined) links.push(link)
  }
  return links
}

/** The program's name: argv[0] without its folder (comm can be a thread's name, "MainThread" in Node 24). */
function commandOf(pid: number): string {
  return basename(nulSeparated(`/proc/${pid}/cmdline`)[0] ?? '') || '?'
}
