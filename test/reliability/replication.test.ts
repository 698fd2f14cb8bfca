import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { runCli } from '../../cli/run.js'
import { openDatabase } from '../../db/connection.js'
import { MONITOR_INTERVAL_MS, SYNC_INTERVAL_MS } from '../../db/replication/litestream-config.js'
import { createTokenRepository } from '../../db/repositories/tokens.js'
import { capture } from '../cli/capture.js'
import { childrenNamed, errorLines, startServer, stopServer } from './server-process.js'
import { checkRestored, driveWrites, newWriteRecord } from './ward-writes.js'

/**
 * Continuous replication with the real server and the real Litestream, to a replica directory.
 * Nothing here is timed: writes are counted, and whatever waits for Litestream polls, with tap's
 * timeout as the bound. test/drill/ holds the timed targets (npm run drill).
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function writeToken(path: string, role: 'write' | 'admin' = 'write'): string {
  const db = openDatabase(path)
  const { token } = createTokenRepository(db).create({ account: role === 'admin' ? 'admin-1' : 'nurse', role })
  db.close()
  return token
}

/** /health with an admin token: the details of replication are an admin's (docs/API.md). */
async function health(base: string, admin: string) {
  const res = await fetch(`${base}/health`, { headers: { authorization: `Bearer ${admin}` } })
  return { status: res.status, body: (await res.json()) as { replication?: Record<string, unknown> } }
}

async function restore(from: string, to: string): Promise<string[]> {
  const io = capture()
  const code = await runCli(['restore', '--from', from, '--to', to], io)
  if (code !== 0) throw new Error(`restore failed: ${io.stderr.join('\n')}`)
  return io.stdout
}

t.test('replication keeps up while writes run; a graceful stop ships the rest (final sync)', async (t) => {
  const dir = t.testdir()
  const path = join(dir, 'data', 'ward.db')
  const replica = join(dir, 'replica')
  const token = writeToken(path)
  const admin = writeToken(path, 'admin')
  const server = await startServer({ DATABASE_PATH: path, REPLICA_URL: replica })
  t.teardown(() => stopServer(server, 'SIGKILL'))
  const record = newWriteRecord()
  const writing = driveWrites(server.base, token, { writers: 2, prefix: 'k', dischargeEvery: 4, pauseMs: 5 }, record)
  while (record.admitted.size < 300 && record.unexpected.length === 0) await sleep(20)

  const during = await health(server.base, admin)
  t.equal(during.status, 200)
  t.match(during.body.replication, { running: true, restarts: 0, lagMs: Number, lastSyncAt: Number })
  t.notOk(during.body.replication && 'failing' in during.body.replication, 'not failing')

  // While the writes go on: a restore holds every write acknowledged longer ago than Litestream's
  // interval (copy to its shadow WAL + sync). Tried again until it does; tap's timeout bounds it.
  let rounds = 0
  for (;;) {
    const out = join(dir, `during-${rounds++}.db`)
    const startedAt = Date.now()
    await restore(replica, out)
    const check = checkRestored(out, record, 'k')
    t.same([check.strangers, check.inconsistent], [[], []], `restore ${rounds}: nothing half-applied or unknown`)
    const due = startedAt - SYNC_INTERVAL_MS - MONITOR_INTERVAL_MS
    const late =
      check.missing.filter(([, at]) => at < due).length + check.undischarged.filter(([, at]) => at < due).length
    if (late === 0) break
    t.comment(`restore ${rounds}: ${late} writes older than the interval not there yet; again`)
    await sleep(200)
  }
  t.pass(`restore ${rounds} held every write acknowledged more than an interval before it, with writes going on`)

  // The writes go on to the last moment; SIGTERM: requests finish, the database closes, and only
  // then does Litestream stop, after a final sync.
  const stopping = stopServer(server, 'SIGTERM')
  record.stop = true
  await writing
  t.equal(await stopping, 0, 'the server stopped cleanly')
  t.match(server.output(), /litestream .*after its final sync: every commit is on the replica/)
  t.same(errorLines(server.output()), [], 'no error logged')
  const final = join(dir, 'final.db')
  t.match((await restore(replica, final)).join('\n'), /integrity ok/)
  const check = checkRestored(final, record, 'k')
  t.same(check.missing, [], `every one of ${record.admitted.size} acknowledged admissions is on the replica`)
  t.same(check.undischarged, [], `every one of ${record.discharged.size} acknowledged discharges too`)
  t.same([check.strangers, check.inconsistent], [[], []], 'and nothing else, nothing half-applied')
  t.same(record.unexpected, [], 'every write was answered 200')
})

t.test(
  'Litestream killed: the server starts it again (restarts counted, /health 200 throughout), and replication goes on',
  async (t) => {
    const dir = t.testdir()
    const path = join(dir, 'ward.db')
    const replica = join(dir, 'replica')
    const token = writeToken(path)
    const admin = writeToken(path, 'admin')
    const server = await startServer({ DATABASE_PATH: path, REPLICA_URL: replica })
    t.teardown(() => stopServer(server, 'SIGKILL'))
    while ((await health(server.base, admin)).body.replication?.lastSyncAt === undefined) await sleep(20)
    const [litestream] = childrenNamed(server.child.pid as number, 'litestream')
    t.ok(litestream, 'Litestream runs as a child of the server')
    process.kill(litestream as number, 'SIGKILL')

    while (!/litestream ended \(SIGKILL\); starting it again in 1000 ms/.test(server.output())) await sleep(20)
    const statuses = new Set<number>()
    let now = await health(server.base, admin)
    while (now.body.replication?.restarts !== 1 || now.body.replication?.running !== true) {
      statuses.add(now.status)
      now = await health(server.base, admin)
    }
    t.same([...statuses], statuses.size === 0 ? [] : [200], 'the service stays healthy meanwhile')
    t.not(childrenNamed(server.child.pid as number, 'litestream')[0], litestream, 'a new Litestream')

    const record = newWriteRecord()
    const writing = driveWrites(server.base, token, { writers: 2, prefix: 'r' }, record)
    while (record.admitted.size < 50 && record.unexpected.length === 0) await sleep(20)
    record.stop = true
    await writing
    now = await health(server.base, admin)
    t.notOk('failing' in (now.body.replication ?? {}), 'no longer failing once it ships again')
    // Stopped right after the restart: Litestream is given the moment it needs to open the
    // database, or it would end without any final sync.
    t.equal(await stopServer(server, 'SIGTERM'), 0)
    t.match(server.output(), /litestream .*after its final sync: every commit is on the replica/)
    const out = join(dir, 'restored.db')
    await restore(replica, out)
    t.same(checkRestored(out, record, 'r').missing, [], 'writes after the restart reached the replica')
  },
)

t.test('a server killed outright takes its Litestream along (no orphan holding the database)', async (t) => {
  const dir = t.testdir()
  const server = await startServer({ DATABASE_PATH: join(dir, 'ward.db'), REPLICA_URL: join(dir, 'replica') })
  const admin = writeToken(join(dir, 'ward.db'), 'admin')
  while ((await health(server.base, admin)).body.replication?.lastSyncAt === undefined) await sleep(20)
  const [litestream] = childrenNamed(server.child.pid as number, 'litestream')
  await stopServer(server, 'SIGKILL')
  // setpriv --pdeathsig TERM: Litestream gets SIGTERM when its parent dies, and ends.
  // Ended: gone, or a zombie that nobody has reaped yet (state Z in /proc/PID/stat).
  const alive = () => {
    try {
      return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${litestream}/stat`, 'utf8'))
    } catch {
      return false
    }
  }
  while (alive()) await sleep(20)
  t.pass(`Litestream (pid ${litestream}) ended with the server`)
})
