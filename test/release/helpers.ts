import { execFile, execFileSync, spawn } from 'node:child_process'
import { copyFileSync, mkdirSync, readFileSync, realpathSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { PROJECT_ROOT } from '../../lib/product-files.js'
import { listening, type ServerProcess } from '../reliability/server-process.js'

export interface Release {
  version: string
  name: string
  /** release/<name>: the executable. */
  executable: string
  archive: string
  sums: string
}

/**
 * The release build of these sources: `npm run release`'s script, which keeps the last build when
 * nothing it is made from has changed (release/build-info.json) and builds otherwise.
 */
export function releaseBuild(): Release {
  execFileSync(process.execPath, ['scripts/release/build.mjs', '--if-changed'], { cwd: PROJECT_ROOT, stdio: 'pipe' })
  const dir = join(PROJECT_ROOT, 'release')
  const { version, name } = JSON.parse(readFileSync(join(dir, 'build-info.json'), 'utf8'))
  return {
    version,
    name,
    executable: join(dir, name),
    archive: join(dir, `${name}.tar.gz`),
    sums: join(dir, 'SHA256SUMS'),
  }
}

/** The executable as a facility has it: copied alone into an empty folder, beside a home folder. */
export interface Install {
  dir: string
  home: string
  exe: string
}

export function installAlone(dir: string, executable: string): Install {
  const home = join(dir, 'home')
  mkdirSync(home)
  const exe = join(dir, 'facility-service')
  copyFileSync(executable, exe)
  return { dir, home, exe }
}

/** What `env -i PATH=/nonexistent HOME=<home>` leaves: no Node, no npm, nothing else. */
export function bareEnvironment(install: Install, extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: '/nonexistent', HOME: install.home, ...extra }
}

/** `facility-service serve` in its folder, with a database in ./data, listening on a free port. */
export function serveExecutable(install: Install, extra: Record<string, string> = {}): Promise<ServerProcess> {
  const env = bareEnvironment(install, { PORT: '0', LOG_LEVEL: 'info', ...extra })
  const child = spawn(install.exe, ['serve'], { cwd: install.dir, env, stdio: ['ignore', 'pipe', 'pipe'] })
  return listening(child)
}

export interface CliResult {
  code: number
  stdout: string
  stderr: string
}

/** One command of the executable's own CLI, in its folder and the bare environment. */
export function runExecutable(
  install: Install,
  args: string[],
  extra: Record<string, string> = {},
): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(install.exe, args, { cwd: install.dir, env: bareEnvironment(install, extra) }, (error, stdout, stderr) => {
      const code = error ? Number((error as { code?: unknown }).code ?? 1) : 0
      resolve({ code, stdout, stderr })
    })
  })
}

/** Reads a Server-Sent Events stream until `until` appears in it (or `ms` pass), then closes it. */
export async function readEvents(response: Response, until: string, ms = 10_000): Promise<string> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader()
  const decoder = new TextDecoder()
  let text = ''
  const deadline = setTimeout(() => void reader.cancel(), ms)
  try {
    while (!text.includes(until)) {
      const { done, value } = await reader.read()
      if (done) break
      text += decoder.decode(value, { stream: true })
    }
  } finally {
    clearTimeout(deadline)
    await reader.cancel().catch(() => {})
  }
  return text
}

/** An earlier build of this repository, from its history, run from its sources with tsx. */
export interface OldBuild {
  dir: string
  commit: string
  /** How many migrations its schema.sql has (fewer than this build's). */
  schema: number
}

const migrationsIn = (commit: string) =>
  (
    execFileSync('git', ['show', `${commit}:schema.sql`], { cwd: PROJECT_ROOT, encoding: 'utf8' }).match(
      /^-- migration \d+:/gm,
    ) ?? []
  ).length

/**
 * The newest commit whose schema has fewer migrations than this one's: the release a facility
 * runs before an upgrade that migrates. Its files from `git archive`, this checkout's node_modules.
 */
export function oldBuild(dir: string): OldBuild {
  const latest = (readFileSync(join(PROJECT_ROOT, 'schema.sql'), 'utf8').match(/^-- migration \d+:/gm) ?? []).length
  const git = (args: string[]) => execFileSync('git', args, { cwd: PROJECT_ROOT, encoding: 'utf8' }).trim()
  const changes = git(['rev-list', '--first-parent', 'HEAD', '--', 'schema.sql']).split('\n')
  const raised = changes.find((commit) => migrationsIn(`${commit}^1`) < latest)
  if (!raised) throw new Error('no earlier build with fewer migrations in this clone (a shallow clone?)')
  const commit = git(['rev-parse', `${raised}^1`])
  execFileSync('sh', ['-c', `git archive ${commit} | tar -x -C '${dir}'`], { cwd: PROJECT_ROOT })
  symlinkSync(realpathSync(join(PROJECT_ROOT, 'node_modules')), join(dir, 'node_modules'))
  return { dir, commit, schema: migrationsIn(commit) }
}

/** The old build's server on `database`, listening on a free port. */
export function serveOld(old: OldBuild, database: string): Promise<ServerProcess> {
  const env = { ...process.env, DATABASE_PATH: database, PORT: '0', LOG_LEVEL: 'info', RATE_LIMIT_MAX: '0' }
  const child = spawn(process.execPath, ['--import=tsx', 'server.ts'], {
    cwd: old.dir,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  return listening(child)
}

/** The old build's command-line tool; its standard output. */
export function runOld(old: OldBuild, args: string[]): string {
  return execFileSync(process.execPath, ['--import=tsx', 'cli.ts', ...args], { cwd: old.dir, encoding: 'utf8' })
}
