import { rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { listBackups } from '../../db/backups.js'
import { MONITOR_INTERVAL_MS, SYNC_INTERVAL_MS } from '../../db/replication/litestream-config.js'
import { startServer, stopServer } from '../reliability/server-process.js'
import { driveWrites, newWriteRecord, type WriteRecord } from '../reliability/ward-writes.js'
import { healthWhen, judge, prepareStandby, pullThePlug, runCommand, sleep } from './drill-helpers.js'
import { seedWard } from './seed.js'

prepareStandby()

/**
 * The standby drill (docs/OPERATIONS.md, "Standby and restore"): a ward's server replicating to a
 * file replica, with scheduled backups, takes writes from a client that records every answer; the
 * machine is lost (server and Litestream SIGKILLed at once, its data directory deleted); on a
 * standby, `restore` by the release executable alone (drill-helpers.ts), then a server start. It
 * prints what was lost and how long the ward was without its service, and asserts the targets.
 * Then the same from the newest scheduled backup.
 */

const OCCUPANTS = Number(process.env.DRILL_OCCUPANTS ?? 100_000)
const RECOVERY_TARGET_MS = 60_000
// A commit reaches the replica within Litestream's copy to its shadow WAL plus one sync interval.
const INTERVAL_MS = SYNC_INTERVAL_MS + MONITOR_INTERVAL_MS
const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`

function lossReport(record: WriteRecord, lost: [string, number][], lostAt: number): string {
  const ages = lost.map(([, at]) => Math.max(0, lostAt - at)).sort((a, b) => a - b)
  const range = ages.length === 0 ? '' : `, acknowledged ${ages[0]}–${ages.at(-1)} ms before the loss`
  const inFlight = record.admittingBeds.size + record.discharging.size
  return `${record.admitted.size + record.discharged.size} writes acknowledged, ${inFlight} in flight; ${lost.length} acknowledged writes missing${range}`
}

t.test(`drill: the ward's machine is lost at ${OCCUPANTS} ward occupants; a standby serves again`, async (t) => {
  const dir = t.testdir({ backups: {} })
  const data = join(dir, 'ward-machine')
  const path = join(data, 'facility.db')
  const replica = `file://${join(dir, 'replica')}`
  const backups = join(dir, 'backups')
  let started = Date.now()
  const token = seedWard(path, OCCUPANTS)
  t.comment(`seeded ${OCCUPANTS} ward occupants with SQL in ${s(Date.now() - started)}: ${statSync(path).size} bytes`)

  const env = { DATABASE_PATH: path, REPLICA_URL: replica, BACKUP_DIR: backups, BACKUP_INTERVAL_MINUTES: '1' }
  const ward = await startServer(env, 'server.ts', { detached: true })
  t.teardown(() => {
    if (ward.child.exitCode === null && ward.child.signalCode === null)
      process.kill(-(ward.child.pid as number), 'SIGKILL')
  })
  started = Date.now()
  const ready = await healthWhen(
    ward.base,
    (h) => h.replication?.lastSyncAt !== undefined && h.replication.lagMs === 0 && h.backups?.lastAt !== undefined,
    token,
  )
  t.comment(`Litestream's snapshot and the first scheduled backup: ${s(Date.now() - started)}`)

  // The ward works until the next scheduled backup is taken, and a few seconds more.
  const record = newWriteRecord()
  const writing = driveWrites(ward.base, token, { writers: 4, prefix: 'd', dischargeEvery: 5, pauseMs: 10 }, record)
  await healthWhen(ward.base, (h) => (h.backups?.lastAt ?? 0) > (ready.backups?.lastAt ?? 0), token)
  await sleep(3000 + Math.random() * 2000)
  const lostAt = await pullThePlug(ward)
  await writing
  rmSync(data, { recursive: true })
  t.same(record.unexpected, [], 'every write before the loss was answered 200')

  // On the standby, two commands: restore, start.
  const standby = join(dir, 'standby', 'facility.db')
  const restored = await runCommand(['restore', '--from', replica, '--to', standby])
  t.equal(restored.code, 0, `restore from the replica: ${restored.out.split('\n')[0]}`)
  const server = await startServer({ DATABASE_PATH: standby, REPLICA_URL: `${replica}-standby` })
  t.teardown(() => stopServer(server, 'SIGKILL'))
  await healthWhen(server.base, (h) => h.status === 'ok')
  const recoveryMs = Date.now() - lostAt
  const judged = await judge(t, standby, record, lostAt - INTERVAL_MS, { base: server.base, token })
  t.comment(`from the replica: ${lossReport(record, [...judged.missing, ...judged.undischarged], lostAt)}`)
  t.comment(`from the replica: restore ${s(restored.ms)}; machine lost → standby answering: ${s(recoveryMs)}`)
  t.same(judged.late, [], `no acknowledged write older than ${INTERVAL_MS} ms before the loss is missing`)
  t.ok(recoveryMs <= RECOVERY_TARGET_MS, `serving again within ${s(RECOVERY_TARGET_MS)}: ${s(recoveryMs)}`)
  t.equal(judged.records, OCCUPANTS + judged.mine, 'the seeded history is all there')
  t.equal(await stopServer(server), 0)

  // The same from the newest scheduled backup: it holds every write acknowledged before it began.
  const newest = listBackups(backups)[0]
  if (!newest) throw new Error('no scheduled backup was taken')
  const fromBackup = join(dir, 'standby-b', 'facility.db')
  started = Date.now()
  const copied = await runCommand(['restore', '--from', newest.file, '--to', fromBackup])
  t.equal(copied.code, 0, `restore from the backup: ${copied.out.split('\n')[0]}`)
  const second = await startServer({ DATABASE_PATH: fromBackup })
  t.teardown(() => stopServer(second, 'SIGKILL'))
  await healthWhen(second.base, (h) => h.status === 'ok')
  const backupMs = Date.now() - started
  const fromCopy = await judge(t, fromBackup, record, newest.at, { base: second.base, token })
  t.comment(
    `from the backup of ${s(lostAt - newest.at)} before the loss: ${lossReport(record, [...fromCopy.missing, ...fromCopy.undischarged], lostAt)}`,
  )
  t.comment(`from the backup: restore ${s(copied.ms)}; restore → standby answering: ${s(backupMs)}`)
  t.same(fromCopy.late, [], 'no write acknowledged before the backup began is missing')
  t.ok(backupMs <= RECOVERY_TARGET_MS, `serving again within ${s(RECOVERY_TARGET_MS)}: ${s(backupMs)}`)
  t.equal(await stopServer(second), 0)
})
