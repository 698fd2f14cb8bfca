import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { litestreamBinary } from '../../db/replication/litestream-config.js'
import { releaseBuild } from '../release/helpers.js'
import type { ServerProcess } from '../reliability/server-process.js'
import { checkRestored, type RestoredCheck, type WriteRecord } from '../reliability/ward-writes.js'

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export interface Health {
  status: string
  backups?: { lastAt?: number }
  replication?: { running: boolean; lagMs: number; lastSyncAt?: number; restarts: number; failing?: object }
}

/** /health's answer (any status), or null while nothing answers; with an admin `token`, the details. */
export async function health(base: string, token?: string): Promise<Health | null> {
  try {
    const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {}
    return (await (await fetch(`${base}/health`, { headers })).json()) as Health
  } catch {
    return null
  }
}

/** Polls /health until `ready` holds; tap's timeout bounds the wait. */
export async function healthWhen(base: string, ready: (health: Health) => boolean, token?: string): Promise<Health> {
  for (;;) {
    const now = await health(base, token)
    if (now !== null && ready(now)) return now
    await sleep(100)
  }
}

let standby: { executable: string; home: string } | undefined

/**
 * The standby's install: the release executable, built by `npm run release`'s script when the
 * sources changed (as the release test does), and a HOME of its own. Called when a drill file
 * loads, so that a build never counts in the time the ward is without its service.
 */
export function prepareStandby(): void {
  const home = mkdtempSync(join(tmpdir(), 'drill-standby-home-'))
  process.once('exit', () => rmSync(home, { recursive: true, force: true }))
  standby = { executable: releaseBuild().executable, home }
}

/**
 * The command-line tool as an operator runs it on a standby that has the release installed: the
 * single executable alone, with PATH=/nonexistent, its HOME and Litestream named by
 * LITESTREAM_PATH, plus `env` (a replica's settings and credentials). Resolves with its exit code,
 * its output, and how long it took.
 */
export async function runCommand(args: string[], env: NodeJS.ProcessEnv = {}) {
  if (!standby) throw new Error('call prepareStandby() when the drill file loads')
  const started = Date.now()
  const child = spawn(standby.executable, args, {
    env: { PATH: '/nonexistent', HOME: standby.home, LITESTREAM_PATH: litestreamBinary(''), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout.on('data', (chunk) => {
    out += chunk
  })
  child.stderr.on('data', (chunk) => {
    out += chunk
  })
  const [code] = await once(child, 'exit')
  return { code: code as number, out, ms: Date.now() - started }
}

/** Ends the server and its children (Litestream) at once, with SIGKILL: the machine is gone. */
export async function pullThePlug(server: ServerProcess): Promise<number> {
  const exited = once(server.child, 'exit')
  process.kill(-(server.child.pid as number), 'SIGKILL')
  const at = Date.now()
  await exited
  return at
}

/** Every record of `account` that the server serves, through the API, page by page. */
export async function servedIds(base: string, token: string, account: string): Promise<Set<string>> {
  const ids = new Set<string>()
  for (let skip = 0; ; skip += 1000) {
    const res = await fetch(`${base}/ward-occupants?createdBy=${account}&$limit=1000&$skip=${skip}`, {
      headers: { authorization: `Bearer ${token}` },
    })
    const page = (await res.json()) as { wardOccupants: { id: string }[] }
    for (const record of page.wardOccupants) ids.add(record.id)
    if (page.wardOccupants.length < 1000) return ids
  }
}

export interface Judged extends RestoredCheck {
  /** Missing acknowledged writes acknowledged before `due` (what the target forbids). */
  late: [string, number][]
}

/**
 * The restored file judged against what the client recorded: `due` is the moment before which
 * every acknowledged write must be there. Also checks that the server serves exactly the file's
 * records of this client.
 */
export async function judge(
  t: Test,
  file: string,
  record: WriteRecord,
  due: number,
  served: { base: string; token: string },
): Promise<Judged> {
  const check = checkRestored(file, record, 'd')
  const late = [...check.missing, ...check.undischarged].filter(([, at]) => at < due)
  const ids = await servedIds(served.base, served.token, 'drill')
  const missing = new Set(check.missing.map(([id]) => id))
  const stored = [...record.admitted.keys()].filter((id) => !missing.has(id))
  t.ok(
    ids.size === check.mine && stored.every((id) => ids.has(id)),
    `the restored server serves the file's ${check.mine} records of the drill (${ids.size} served)`,
  )
  t.same(check.strangers, [], 'it serves no record (and no discharge) that was neither acknowledged nor in flight')
  t.same(check.inconsistent, [], 'every record has its audit entries and feed events, none without its record')
  return { ...check, late }
}
