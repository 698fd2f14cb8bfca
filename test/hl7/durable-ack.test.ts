import fs from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import { type Test, test } from 'tap'

/**
 * An ACK says the change is on disk: none may leave before the `fdatasync` that covers its commit
 * has returned. A crash test by SIGKILL cannot show a missing sync (the page cache survives the
 * process), so here the sync itself is held: this process's `fs.fdatasync` (which db/wal-sync.ts
 * calls for the WAL) waits at a gate the test opens, or fails as a disk would. Set before the app's
 * modules load, so the file runs alone in its process (never in a group).
 */
const gate = {
  held: false,
  fail: false,
  waiting: [] as (() => void)[],
  open() {
    this.held = false
    for (const release of this.waiting.splice(0)) release()
  },
}
const realDatasync = fs.fdatasync
fs.fdatasync = function heldDatasync(fd: number, callback: fs.NoParamCallback) {
  if (!gate.held) return realDatasync(fd, callback)
  gate.waiting.push(() => {
    if (!gate.fail) return realDatasync(fd, callback)
    callback(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO', errno: -5, syscall: 'fdatasync' }))
  })
} as typeof fs.fdatasync
syncBuiltinESMExports()

const { buildTestApp } = await import('../helper.js')
const { until } = await import('../reliability/fault-helpers.js')
const { ackOf, frame, openRawSocket } = await import('./client.js')
const { adt } = await import('./messages.js')

/** Lets the server run on: a few turns of its loop and a moment for loopback to carry what it wrote. */
async function pause(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve))
  await new Promise((resolve) => setTimeout(resolve, 200))
}

async function heldCommit(t: Test) {
  const path = join(t.testdir(), 'ward.db')
  const { app } = await buildTestApp(t, { DATABASE_PATH: path, HL7_PORT: 0 })
  t.equal(app.db.pragma('synchronous', { simple: true }), 1, 'NORMAL: the WAL is synced apart from COMMIT')
  const raw = await openRawSocket(app.hl7.port as number)
  t.teardown(() => raw.socket.destroy())
  const reader = new BetterSqlite3(path, { readonly: true })
  t.teardown(() => reader.close())
  t.teardown(() => gate.open())
  gate.held = true
  raw.socket.write(frame(adt({ event: 'A01', control: 'D1', encounter: 'E1', bed: 'B1' })))
  await until(() => gate.waiting.length > 0)
  t.equal(
    reader.prepare("SELECT count(*) FROM ward_occupants WHERE encounter = 'E1'").pluck().get(),
    1,
    'the admission is committed (another connection reads it), its sync not returned',
  )
  await pause()
  t.same(raw.acks, [], 'no ACK while the sync has not returned')
  return raw
}

test('the ACK leaves only after the sync of its commit has returned', async (t) => {
  const raw = await heldCommit(t)
  gate.open()
  t.same(ackOf((await raw.next(1))[0] as string), { code: 'AA', control: 'D1', text: 'applied', err: null })
})

test('a sync the disk fails: AE, never AA, for a message committed but not durable', async (t) => {
  const raw = await heldCommit(t)
  gate.fail = true
  t.teardown(() => {
    gate.fail = false
  })
  gate.open()
  const answer = ackOf((await raw.next(1))[0] as string)
  t.equal(answer.code, 'AE', 'the sender keeps it and sends it again')
  t.match(answer.err, /^ERR\|/)
})
