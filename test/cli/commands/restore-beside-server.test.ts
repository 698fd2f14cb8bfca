import { execFile, spawn } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, readdirSync, renameSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import t, { type Test } from 'tap'
import { runCli } from '../../../cli/run.js'
import { PROJECT_ROOT } from '../../../lib/product-files.js'
import { listening, type ServerProcess, stopServer } from '../../reliability/server-process.js'
import { capture } from '../capture.js'

// The documented restore (docs/OPERATIONS.md, "Restore") done with the old server still running:
// `mv data data.before`, then `restore --to data/facility.db`. The old server keeps its files open
// where they went and keeps answering; a restored database beside it would make two wards.

const TSX = import.meta.resolve('tsx')

/** The server as `npm start` runs it, in `cwd`, as its own process: real files held open, a real environment. */
async function serverIn(t: Test, cwd: string, env: Record<string, string>): Promise<ServerProcess> {
  const { DATABASE_PATH: _, ...inherited } = process.env
  const child = spawn(process.execPath, [`--import=${TSX}`, join(PROJECT_ROOT, 'server.ts')], {
    cwd,
    env: { ...inherited, PORT: '0', LOG_LEVEL: 'info', RATE_LIMIT_MAX: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const server = await listening(child)
  t.teardown(() => stopServer(server, 'SIGKILL'))
  return server
}

async function restore(args: string[]) {
  const io = capture()
  const code = await runCli(['restore', ...args], io)
  return { code, err: io.stderr.join('\n') }
}

/** A backup to restore from, taken with the CLI from a database it makes. */
async function backupIn(t: Test, dir: string): Promise<string> {
  const db = join(dir, 'source.db')
  t.equal(await runCli(['--database', db, 'token', 'create', '--account', 'a', '--role', 'read'], capture()), 0)
  const backup = join(dir, 'backup.db')
  t.equal(await runCli(['--database', db, 'backup', backup], capture()), 0)
  return backup
}

t.test('mv data data.before under a running server (npm start, its default ./data): restore refuses', async (t) => {
  const dir = t.testdir({ ward: {} })
  const backup = await backupIn(t, dir)
  const ward = join(dir, 'ward')
  const server = await serverIn(t, ward, {})
  t.ok(existsSync(join(ward, 'data', 'facility.db')), 'the server made ./data/facility.db')
  renameSync(join(ward, 'data'), join(ward, 'data.before'))
  t.equal((await fetch(`${server.base}/health`)).status, 200, 'the old server still answers')

  const to = join(ward, 'data', 'facility.db')
  const refused = await restore(['--from', backup, '--to', to])
  t.equal(refused.code, 1)
  t.match(refused.err, `process ${server.child.pid} (node) was started on ${to} and still has that database open`)
  t.match(refused.err, `where it was moved, ${join(ward, 'data.before', 'facility.db')}`)
  t.match(refused.err, `Stop it (systemctl stop facility-service, or kill ${server.child.pid}), then restore`)
  t.notOk(existsSync(to), 'nothing was written')

  t.equal(await stopServer(server), 0)
  const done = await restore(['--from', backup, '--to', to])
  t.equal(done.code, 0, `once the server stopped, the restore is done: ${done.err}`)
})

t.test('a moved folder named by an absolute DATABASE_PATH (the systemd unit): restore refuses', async (t) => {
  const dir = t.testdir({ backup: {} })
  const backup = await backupIn(t, join(dir, 'backup'))
  const state = join(dir, 'var-lib-facility-service')
  const to = join(state, 'facility.db')
  const server = await serverIn(t, dir, { DATABASE_PATH: to })
  renameSync(state, `${state}.before`)
  const refused = await restore(['--from', backup, '--to', to])
  t.equal(refused.code, 1)
  t.match(refused.err, `process ${server.child.pid} (node) was started on ${to}`)
  t.notOk(existsSync(state), 'nothing was written, not even the folder')

  // Another ward's server on another path is no reason to refuse.
  const other = join(dir, 'other-ward', 'facility.db')
  const done = await restore(['--from', backup, '--to', other])
  t.equal(done.code, 0, done.err)
})

t.test('restore makes the folders it creates 0700 and the database 0600, under umask 022', async (t) => {
  const dir = t.testdir()
  const backup = await backupIn(t, dir)
  const existing = join(dir, 'standby')
  mkdirSync(existing)
  chmodSync(existing, 0o755)
  const to = join(existing, 'state', 'ward', 'facility.db')
  // Its own process, as an operator's shell runs it: the umask is the process's.
  const command = `umask 022 && exec "${process.execPath}" --import=${TSX} cli.ts restore --from "${backup}" --to "${to}"`
  const stderr = await new Promise<string>((resolve) =>
    execFile('sh', ['-c', command], { cwd: PROJECT_ROOT }, (_error, _out, err) => resolve(err)),
  )
  t.ok(existsSync(to), `restored: ${stderr}`)
  t.equal(statSync(join(existing, 'state')).mode & 0o777, 0o700, 'the first folder it made')
  t.equal(statSync(dirname(to)).mode & 0o777, 0o700, 'the database’s folder')
  t.equal(statSync(to).mode & 0o777, 0o600, 'the database')
  t.same(readdirSync(dirname(to)), ['facility.db'], 'its work folder is gone')
  t.equal(statSync(existing).mode & 0o777, 0o755, 'a folder that was there is the operator’s, left as it was')
})
