import { join } from 'node:path'
import t from 'tap'
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
