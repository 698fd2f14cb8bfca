import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { bearer, buildTestApp } from '../helper.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

t.test('a served write reaches the database file through the checkpoint worker', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'checkpoints-app-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'facility.db')
  const { app, tokens } = await buildTestApp(t, { DATABASE_PATH: path })
  const checkpoints = app.checkpoints
  if (checkpoints === null) throw new Error('a database in a file has a checkpoint worker')
  t.notOk(checkpoints.running, 'no worker before the first write')
  const copied = new Promise<void>((resolve) => {
    checkpoints.onCheckpoint((done) => {
      if (done.frames > 0 && done.copied === done.frames) resolve()
    })
  })
  const res = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(tokens.write),
    payload: { encounter: 'enc-1', bed: 'B-1', occupiedBy: 'patient-1' },
  })
  t.equal(res.statusCode, 200, res.body)
  const { id } = res.json() as { id: string }
  await copied
  t.ok(checkpoints.running)
  t.equal(app.db.pragma('wal_autocheckpoint', { simple: true }), 0, "the server's connection checkpoints nothing")
  // The database file alone, without its WAL: what a checkpoint copied back, and nothing else.
  const copy = join(dir, 'copy.db')
  copyFileSync(path, copy)
  const reader = new BetterSqlite3(copy, { readonly: true })
  t.teardown(() => reader.close())
  t.same(reader.prepare('SELECT id FROM ward_occupants WHERE id = ?').all(id), [{ id }])
  await app.close()
  t.notOk(checkpoints.running, 'closing the app ends the worker')
})

t.test('an in-memory database has no checkpoint worker', async (t) => {
  const { app } = await buildTestApp(t)
  t.equal(app.checkpoints, null)
  await sleep(0)
})
