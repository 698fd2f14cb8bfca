import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t, { type Test } from 'tap'
import { runCli } from '../../cli/run.js'
import { bearer } from '../helper.js'
import { buildLoggedApp, until } from './fault-helpers.js'

/**
 * Another process holds the write lock (here a second connection in BEGIN IMMEDIATE, as an admin's
 * sqlite3 shell would). Everything is ordered, never timed: the lock is released only after the
 * requests that need no write lock have answered.
 */
async function setup(t: Test, busyTimeoutMs: number, auditReads = false) {
  const path = join(t.testdir(), 'busy.db')
  const { app, token, lines } = await buildLoggedApp(t, {
    DATABASE_PATH: path,
    DATABASE_BUSY_TIMEOUT_MS: busyTimeoutMs,
    AUDIT_READS: auditReads,
  })
  const write = bearer(token('nurse', 'write'))
  const read = bearer(token('viewer', 'read'))
  const seed = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: write,
    payload: { encounter: 'e-1', bed: 'B-1', occupiedBy: 'p' },
  })
  const lock = new BetterSqlite3(path)
  t.teardown(() => {
    if (lock.inTransaction) lock.exec('ROLLBACK')
    lock.close()
  })
  lock.exec('BEGIN IMMEDIATE')
  return { app, path, write, read, lock, lines, seedId: seed.json().id as string }
}

t.test(
  'while another process holds the lock, reads and /health answer; the write ends 200 once it is released',
  async (t) => {
    const { app, path, write, read, lock, lines, seedId } = await setup(t, 60_000)
    let settled = false
    const admission = app
      .inject({
        method: 'POST',
        url: '/ward-occupants',
        headers: write,
        payload: { encounter: 'e-2', bed: 'B-2', occupiedBy: 'p' },
      })
      .finally(() => {
        settled = true
      })
    await until(() => app.writes.waitingSince !== null)

    const answers = await Promise.all([
      app.inject('/health'),
      app.inject({ url: '/ward-occupants?dischargedAt=null', headers: read }),
      app.inject({ url: `/ward-occupants/${seedId}`, headers: read }),
      app.inject({ url: '/notifications/unseen-count', headers: read }),
      app.inject({ url: '/form-templates', headers: read }),
      app.inject({ method: 'POST', url: '/events/tickets', headers: read }),
    ])
    t.same(
      answers.map((a) => a.statusCode),
      [200, 200, 200, 200, 200, 200],
      'reads, /health, token checks and a stream ticket answer',
    )
    t.same(answers[0]?.json(), { status: 'ok', database: 'ok' }, 'a lock is not unhealthy')
    t.ok(lock.inTransaction, '... while the lock is still held')
    t.notOk(settled, '... and the write is still waiting')
    // Logged once the wait lasts (a second): Litestream's checkpoints hold the lock for milliseconds.
    await until(() => lines.some((l) => /locked by another process/.test(l.msg)))
    t.ok(lock.inTransaction && !settled, 'the wait is logged while it lasts')

    // The CLI shares the file: it reads while the lock is held, and a write of its own says it is busy.
    const out: string[] = []
    const err: string[] = []
    const io = { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }
    t.equal(await runCli(['--database', path, 'token', 'list'], io), 0, 'the CLI reads while the lock is held')
    const code = await runCli(
      ['--database', path, '--busy-timeout', '50', 'token', 'create', '--account', 'x', '--role', 'read'],
      io,
    )
    t.equal(code, 75, 'a CLI write past its wait exits 75 (temporary failure)')
    t.match(err.join('\n'), /locked by another process.*SQLITE_BUSY/)

    lock.exec('COMMIT')
    const res = await admission
    t.equal(res.statusCode, 200, 'the write succeeds once the lock is released')
    const oracle = new BetterSqlite3(path, { readonly: true })
    t.teardown(() => oracle.close())
    t.equal(oracle.prepare('SELECT count(*) FROM ward_occupants WHERE id = ?').pluck().get(res.json().id), 1)
    t.equal(app.writes.waitingSince, null)
  },
)

t.test('a lock held past DATABASE_BUSY_TIMEOUT_MS: 503 DATABASE_BUSY with Retry-After, nothing stored', async (t) => {
  const { app, path, write, lock, seedId } = await setup(t, 100)
  const answers = await Promise.all([
    app.inject({
      method: 'POST',
      url: '/ward-occupants',
      headers: write,
      payload: { encounter: 'e-3', bed: 'B-3', occupiedBy: 'p' },
    }),
    app.inject({ method: 'PATCH', url: `/ward-occupants/${seedId}`, headers: write, payload: { discharge: true } }),
    app.inject({ method: 'POST', url: '/notifications/x/seen', headers: write }),
  ])
  t.ok(lock.inTransaction, 'answered while the lock is still held')
  for (const res of answers) {
    t.equal(res.statusCode, 503)
    t.match(res.json(), { code: 'DATABASE_BUSY', error: 'Service Unavailable' })
    t.match(res.json().message, /locked by another process/)
    t.equal(res.headers['retry-after'], '1')
  }
  lock.exec('ROLLBACK')
  const oracle = new BetterSqlite3(path, { readonly: true })
  t.teardown(() => oracle.close())
  t.equal(oracle.prepare('SELECT count(*) FROM ward_occupants').pluck().get(), 1, 'only the first admission')
  t.equal(oracle.prepare('SELECT discharged_at FROM ward_occupants').pluck().get(), null, 'not discharged')
  const after = await app.inject({
    method: 'PATCH',
    url: `/ward-occupants/${seedId}`,
    headers: write,
    payload: { discharge: true },
  })
  t.equal(after.statusCode, 200, 'the next write works')
})

t.test('with AUDIT_READS, a read needs its entry written: past the wait 503 DATABASE_BUSY, no record', async (t) => {
  const { app, path, read, lock, seedId } = await setup(t, 100, true)
  const answers = await Promise.all([
    app.inject({ url: `/ward-occupants/${seedId}`, headers: read }),
    app.inject({ url: '/ward-occupants?dischargedAt=null', headers: read }),
  ])
  const health = await app.inject('/health')
  t.ok(lock.inTransaction, 'answered while the lock is still held')
  for (const res of answers) {
    t.equal(res.statusCode, 503, 'the same answer a write gets')
    t.match(res.json(), { code: 'DATABASE_BUSY', error: 'Service Unavailable' })
    t.equal(res.headers['retry-after'], '1')
    t.notMatch(res.body, seedId, 'no record left unaudited')
    t.notOk(res.headers.etag)
  }
  t.equal(health.statusCode, 200, '/health reads no record: it answers')
  lock.exec('ROLLBACK')
  const again = await app.inject({ url: `/ward-occupants/${seedId}`, headers: read })
  t.equal(again.statusCode, 200, 'the read answers once the lock is gone')
  const oracle = new BetterSqlite3(path, { readonly: true })
  t.teardown(() => oracle.close())
  t.same(
    oracle.prepare('SELECT route, record_id, status FROM read_log').all(),
    [{ route: 'GET /ward-occupants/:id', record_id: seedId, status: 200 }],
    'the one entry is of the read that was answered',
  )
})
