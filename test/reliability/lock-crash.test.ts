import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { openDatabase } from '../../db/connection.js'
import { createTokenRepository } from '../../db/repositories/tokens.js'
import { startServer, stopServer } from './server-process.js'

const WRITERS = 8

/**
 * SIGKILL while writes wait for a lock another process holds: the writes acknowledged before the
 * lock are all there after a restart, and none of the waiting ones was acknowledged or half-stored.
 */
t.test('SIGKILL while writes wait on a lock held by another process loses nothing acknowledged', async (t) => {
  const path = join(t.testdir(), 'lock-crash.db')
  const setup = openDatabase(path)
  const { token } = createTokenRepository(setup).create({ account: 'crash', role: 'write' })
  setup.close()
  const server = await startServer({ DATABASE_PATH: path, DATABASE_BUSY_TIMEOUT_MS: '60000' })
  const acknowledged: string[] = []
  const sent: string[] = []
  let lockTaken = false
  const lateAnswers: number[] = []
  let n = 0
  async function writer(w: number) {
    for (;;) {
      const encounter = `w${w}-${n++}`
      const whileLocked = lockTaken
      sent.push(encounter)
      let res: Response
      try {
        res = await fetch(`${server.base}/ward-occupants`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ encounter, bed: encounter, occupiedBy: 'patient' }),
        })
      } catch {
        return // the server is gone
      }
      if (whileLocked) lateAnswers.push(res.status)
      if (res.status !== 200) return
      acknowledged.push(((await res.json()) as { id: string }).id)
    }
  }
  const writing = Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)))
  while (acknowledged.length < 50) await new Promise((resolve) => setTimeout(resolve, 5))

  // Another process's transaction: it waits (blocking this test process only) for the server's
  // current batch, then holds the lock until after the kill.
  const lock = new BetterSqlite3(path, { timeout: 10_000 })
  lock.exec('BEGIN IMMEDIATE')
  lockTaken = true
  await new Promise((resolve) => setTimeout(resolve, 300)) // writes pile up behind the lock
  t.equal(lateAnswers.length, 0, 'no write sent while the lock was held was answered')
  await stopServer(server, 'SIGKILL')
  lock.exec('ROLLBACK')
  lock.close()
  await writing

  const oracle = new BetterSqlite3(path, { readonly: true })
  t.teardown(() => oracle.close())
  t.equal(oracle.pragma('integrity_check', { simple: true }), 'ok')
  const stored = new Set(oracle.prepare('SELECT id FROM ward_occupants').pluck().all() as string[])
  t.ok(
    acknowledged.every((id) => stored.has(id)),
    `all ${acknowledged.length} acknowledged writes are in the file`,
  )
  t.equal(stored.size, acknowledged.length, 'and nothing else (the waiting writes were never committed)')
  const audited = oracle.prepare('SELECT count(*) FROM audit_log').pluck().get()
  t.equal(audited, stored.size, 'each with its audit entry')
  t.ok(sent.length > acknowledged.length, 'some writes were waiting when the server died')
})
