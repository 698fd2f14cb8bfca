import { once } from 'node:events'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { openDatabase } from '../../db/connection.js'
import { createTokenRepository } from '../../db/repositories/tokens.js'
import { KILL_AFTER_COMMIT_SERVER, startServer, stopServer } from './server-process.js'

/**
 * The worst moment to crash: the change is committed, its answer not yet sent. The first server
 * is a test-only entry (kill-after-commit-server.ts) that SIGKILLs itself right after the first
 * commit that stored something. After the restart, the retry must get the answer of the change
 * that was made, and make no second one.
 */
t.test('a crash between the commit and the answer: the retry after restart gets the stored answer', async (t) => {
  const path = join(t.testdir(), 'idem-crash.db')
  const setup = openDatabase(path)
  const { token } = createTokenRepository(setup).create({ account: 'nurse', role: 'write' })
  setup.close()
  const admit = (base: string) =>
    fetch(`${base}/ward-occupants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': 'admit-1' },
      body: JSON.stringify({ encounter: 'e-1', bed: 'B-1', occupiedBy: 'patient-1' }),
    })

  const doomed = await startServer({ DATABASE_PATH: path }, KILL_AFTER_COMMIT_SERVER)
  const exited = once(doomed.child, 'exit')
  await t.rejects(admit(doomed.base), 'the client gets no answer')
  const [, signal] = await exited
  t.equal(signal, 'SIGKILL', 'the server died right after the commit')

  const oracle = new BetterSqlite3(path, { readonly: true })
  const made = oracle.prepare('SELECT id FROM ward_occupants').pluck().all()
  oracle.close()
  t.equal(made.length, 1, 'the admission was committed before the crash')

  const server = await startServer({ DATABASE_PATH: path })
  t.teardown(() => stopServer(server))
  const retry = await admit(server.base)
  t.equal(retry.status, 200, 'not 409 BED_OCCUPIED naming its own first attempt')
  t.equal(retry.headers.get('idempotent-replayed'), 'true')
  t.ok(retry.headers.get('etag'), 'with its ETag')
  t.equal(((await retry.json()) as { id: string }).id, made[0], 'the answer of the admission that was made')

  const after = new BetterSqlite3(path, { readonly: true })
  t.teardown(() => after.close())
  t.equal(after.prepare('SELECT count(*) FROM ward_occupants').pluck().get(), 1, 'no second admission')
  t.equal(after.prepare('SELECT count(*) FROM audit_log').pluck().get(), 1, 'no second audit entry')
  t.equal(after.prepare(`SELECT count(*) FROM feed_events WHERE resource = 'ward-occupants'`).pluck().get(), 1)
})
