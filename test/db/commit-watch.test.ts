import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import fc from 'fast-check'
import t, { type Test } from 'tap'
import { watchCommits } from '../../db/wal-index-header.js'
import { bearer, buildTestApp } from '../helper.js'

const RUNS = Number(process.env.FUZZ_RUNS ?? 25)

function walFile(t: Test, name: string) {
  const db = new BetterSqlite3(join(t.testdir(), name))
  db.pragma('journal_mode = WAL')
  db.exec('CREATE TABLE IF NOT EXISTS t (x)')
  return db
}

t.test('the WAL-index header tells a commit of any connection, and only a commit', async (t) => {
  const db = walFile(t, 'a.db')
  const other = new BetterSqlite3(db.name)
  t.teardown(() => {
    other.close()
    db.close()
  })
  const watch = watchCommits(db)
  if (!watch) throw new Error('a WAL file has a header to watch')
  t.notOk(watch.unchangedSinceMark(), 'nothing is known before a mark')
  watch.mark()
  t.ok(watch.unchangedSinceMark())
  db.prepare('SELECT count(*) FROM t').get()
  other.prepare('SELECT count(*) FROM t').get()
  t.ok(watch.unchangedSinceMark(), 'reads by either connection change nothing')
  other.prepare('INSERT INTO t VALUES (1)').run()
  t.notOk(watch.unchangedSinceMark(), "another connection's commit")
  watch.mark()
  other.pragma('wal_checkpoint(PASSIVE)')
  t.ok(watch.unchangedSinceMark(), 'a checkpoint copies pages and commits nothing')
  db.prepare('INSERT INTO t VALUES (2)').run()
  t.notOk(watch.unchangedSinceMark(), "this connection's own commit")
  watch.mark()
  other.pragma('wal_checkpoint(TRUNCATE)')
  other.prepare('INSERT INTO t VALUES (3)').run()
  t.notOk(watch.unchangedSinceMark(), 'a commit into a WAL started afresh')
  watch.mark()
  other.prepare('INSERT INTO t VALUES (4)').run()
  t.notOk(watch.unchangedSinceMark(), 'and the next one')
})

t.test('no header to watch: in memory, a rollback journal, exclusive locking', async (t) => {
  const memory = new BetterSqlite3(':memory:')
  t.equal(watchCommits(memory), null)
  memory.close()
  const rollback = new BetterSqlite3(join(t.testdir(), 'rollback.db'))
  t.equal(watchCommits(rollback), null)
  rollback.close()
  const exclusive = walFile(t, 'exclusive.db')
  exclusive.pragma('locking_mode = EXCLUSIVE')
  t.equal(watchCommits(exclusive), null)
  exclusive.close()
})

t.test('a revocation committed by another process counts on the running server’s next request', async (t) => {
  const path = join(t.testdir(), 'server.db')
  const { app } = await buildTestApp(t, { DATABASE_PATH: path })
  const { token, info } = app.tokens.create({ account: 'x', role: 'read' })
  const get = () => app.inject({ url: '/ward-occupants', headers: bearer(token) })
  t.equal((await get()).statusCode, 200)
  t.equal((await get()).statusCode, 200, 'remembered')
  // Another process: its commit reaches this one only through the files.
  const script = `const D = require(${JSON.stringify(createRequire(import.meta.url).resolve('better-sqlite3'))});
    new D(process.argv[1]).prepare('UPDATE tokens SET revoked_at = 1 WHERE id = ?').run(process.argv[2])`
  const child = spawnSync(process.execPath, ['-e', script, path, info.tokenId], { encoding: 'utf8' })
  t.equal(child.status, 0, child.stderr)
  t.equal((await get()).statusCode, 401, 'revoked at once')
})

t.test('property: a token answers as another connection last left it, whatever came between', async (t) => {
  type Step = 'revoke' | 'restore' | 'other-commit' | 'own-commit' | 'checkpoint' | 'truncate'
  const step = fc.constantFrom<Step>('revoke', 'restore', 'other-commit', 'own-commit', 'checkpoint', 'truncate')
  let run = 0
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
      const path = join(t.testdir(), `p${run++}.db`)
      const { app, tokens } = await buildTestApp(t, { DATABASE_PATH: path })
      const { token, info } = app.tokens.create({ account: 'x', role: 'read' })
      const other = new BetterSqlite3(path)
      try {
        let bed = 0
        for (const s of steps) {
          if (s === 'revoke') other.prepare('UPDATE tokens SET revoked_at = 1 WHERE id = ?').run(info.tokenId)
          if (s === 'restore') other.prepare('UPDATE tokens SET revoked_at = NULL WHERE id = ?').run(info.tokenId)
          if (s === 'other-commit')
            other.prepare("UPDATE tokens SET label = 'x' || random() WHERE id = ?").run(info.tokenId)
          if (s === 'checkpoint') other.pragma('wal_checkpoint(PASSIVE)')
          if (s === 'truncate') other.pragma('wal_checkpoint(TRUNCATE)')
          if (s === 'own-commit') {
            const res = await app.inject({
              method: 'POST',
              url: '/ward-occupants',
              headers: bearer(tokens.write),
              payload: { encounter: `e${bed}`, bed: `b${bed++}`, occupiedBy: 'p' },
            })
            if (res.statusCode >= 300) throw new Error(`${res.statusCode} ${res.body}`)
          }
          // The oracle: the row as the other connection reads it, not the server's memory.
          const revoked = other.prepare('SELECT revoked_at FROM tokens WHERE id = ?').pluck().get(info.tokenId)
          const res = await app.inject({ url: '/ward-occupants', headers: bearer(token) })
          if (res.statusCode !== (revoked === null ? 200 : 401))
            throw new Error(`after ${steps.join(', ')}: ${res.statusCode} with revoked_at ${revoked}`)
        }
      } finally {
        other.close()
        await app.close()
      }
    }),
    { numRuns: RUNS },
  )
  t.pass(`${RUNS} histories`)
})
