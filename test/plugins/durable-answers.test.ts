import { join } from 'node:path'
import t from 'tap'
import { syncFailedError } from '../../db/storage-faults.js'
import { SYNC_STALL_MS } from '../../routes/health/index.js'
import { firstMessage, listeningApp, openStream } from '../feed/helpers.js'
import { bearer, buildTestApp } from '../helper.js'

/** Whether `promise` settles within a few turns; a never-settling one never does. */
async function settlesSoon(promise: Promise<unknown>): Promise<boolean> {
  let settled = false
  const mark = () => {
    settled = true
  }
  promise.then(mark, mark)
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve))
  return settled
}

t.test('while a commit is not on disk, answers wait for it; /health does not', async (t) => {
  const { app, tokens } = await buildTestApp(t, { DATABASE_PATH: join(t.testdir(), 'ward.db') })
  t.equal(app.db.pragma('synchronous', { simple: true }), 1, 'NORMAL: the queue syncs the WAL itself')
  const created = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(tokens.writeA),
    payload: { encounter: 'e-1', bed: 'B-1', occupiedBy: 'p' },
  })
  t.equal(created.statusCode, 200)

  // A disk that stopped answering: the sync of the latest commit never returns.
  let release: () => void = () => {}
  const stuck = new Promise<void>((resolve) => {
    release = resolve
  })
  const whenDurable = app.writes.whenDurable
  app.writes.whenDurable = () => stuck
  const list = app.inject({ url: '/ward-occupants', headers: bearer(tokens.readA) })
  t.notOk(await settlesSoon(list), 'a read that may show the unsynced commit waits')
  const healthAnswer = app.inject({ url: '/health' })
  t.ok(await settlesSoon(healthAnswer), '/health tells no record, so it still answers')
  release()
  const health = await healthAnswer
  t.equal(health.statusCode, 200)
  t.equal(health.json().database, 'ok')

  app.writes.whenDurable = whenDurable
  const answered = await list
  t.equal(answered.statusCode, 200)
  t.equal(answered.json().total, 1, 'and then answers as before')
})

t.test('a database in memory has nothing to sync: COMMIT stays as it was (synchronous=FULL)', async (t) => {
  const { app } = await buildTestApp(t)
  t.equal(app.db.pragma('synchronous', { simple: true }), 2)
  t.equal(app.writes.whenDurable(), undefined)
})

t.test('DURABLE_SYNC=commit: the sync stays inside COMMIT', async (t) => {
  const { app } = await buildTestApp(t, { DATABASE_PATH: join(t.testdir(), 'ward.db'), DURABLE_SYNC: 'commit' })
  t.equal(app.db.pragma('synchronous', { simple: true }), 2)
})

t.test('a sync the disk does not answer for long makes /health unhealthy, naming it', async (t) => {
  const { app, tokens } = await buildTestApp(t, { DATABASE_PATH: join(t.testdir(), 'ward.db') })
  t.equal((await app.inject({ url: '/health' })).statusCode, 200)
  const since = Date.now() - SYNC_STALL_MS - 1000
  Object.defineProperty(app.writes, 'syncRunningSince', { get: () => since, configurable: true })
  t.same((await app.inject({ url: '/health' })).json(), { status: 'unavailable', database: 'io', code: 'SYNC_STALLED' })
  // The text, with its figures, is for an admin (docs/API.md).
  const health = await app.inject({ url: '/health', headers: bearer(tokens.admin) })
  t.equal(health.statusCode, 503)
  t.match(health.json(), { status: 'unavailable', database: 'io', code: 'SYNC_STALLED', since })
  t.match(health.json().message, /has not confirmed a write for \d+ s/)
})

t.test('the live feed keeps delivering while every sync finds a newer commit waiting', async (t) => {
  const { app, tokens, base } = await listeningApp(t)
  const stream = await openStream(`${base}/events?resources=ward-occupants`, bearer(tokens.writeA))
  await firstMessage(stream)
  // Under a steady stream of writes some commit is always waiting for its sync: whenever the hub
  // asks, there is something not yet on disk (here: each sync takes 5 ms, and never catches up).
  const whenDurable = app.writes.whenDurable
  app.writes.whenDurable = () => new Promise((resolve) => setTimeout(resolve, 5))
  t.teardown(() => {
    app.writes.whenDurable = whenDurable
  })
  for (let i = 0; i < 3; i++) {
    const res = await fetch(`${base}/ward-occupants`, {
      method: 'POST',
      headers: { ...bearer(tokens.writeA), 'content-type': 'application/json' },
      body: JSON.stringify({ encounter: `e-${i}`, bed: `S-${i}`, occupiedBy: 'p' }),
    })
    t.equal(res.status, 200)
  }
  await stream.until(
    (s) => s.events.filter((e) => e.event === 'ward-occupants created').length === 3,
    10_000,
    '3 events',
  )
  t.pass('every change reached the stream')
  stream.close()
})

t.test('after a failed sync every answer is a 503 that says so, and /health names it until a restart', async (t) => {
  const { app, tokens } = await buildTestApp(t, { DATABASE_PATH: join(t.testdir(), 'ward.db') })
  // What the write queue does when the disk fails a sync (test/db/write-queue-durable.test.ts).
  app.storage.latch(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }))
  app.writes.whenDurable = () => Promise.reject(syncFailedError())
  const read = await app.inject({ url: '/ward-occupants', headers: bearer(tokens.readA) })
  t.equal(read.statusCode, 503)
  t.equal(read.headers['retry-after'], '30')
  t.match(read.json(), { code: 'STORAGE_IO_ERROR', message: /may or may not be stored/ })
  t.same((await app.inject({ url: '/health' })).json(), {
    status: 'unavailable',
    database: 'io',
    code: 'SQLITE_IOERR_FSYNC',
  })
  const health = await app.inject({ url: '/health', headers: bearer(tokens.admin) })
  t.equal(health.statusCode, 503)
  t.match(health.json(), { database: 'io', code: 'SQLITE_IOERR_FSYNC', message: /until the service is restarted/ })
})
