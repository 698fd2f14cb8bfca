import { spawnSync } from 'node:child_process'
import { readdirSync, readlinkSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import fc from 'fast-check'
import t, { type Test } from 'tap'
import { dataVersionOf, onStrayWrite } from '../../db/data-version.js'
import { StorageState } from '../../db/storage-faults.js'
import { watchCommits } from '../../db/wal-index-header.js'
import { createWriteQueue } from '../../db/write-queue.js'
import { bearer, buildTestApp } from '../helper.js'

const RUNS = Number(process.env.FUZZ_RUNS ?? 25)

function walFile(t: Test, name: string) {
  const db = new BetterSqlite3(join(t.testdir(), name))
  db.pragma('journal_mode = WAL')
  db.exec('CREATE TABLE IF NOT EXISTS t (x)')
  return db
}

/** A WAL file and a second connection to it (the CLI's, an admin's shell), both closed at the end. */
function twoConnections(t: Test, name: string) {
  const db = walFile(t, name)
  const other = new BetterSqlite3(db.name)
  t.teardown(() => {
    other.close()
    db.close()
  })
  return { db, other }
}

t.test('the WAL-index header tells a commit of any connection, and only a commit', async (t) => {
  const { db, other } = twoConnections(t, 'a.db')
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

const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

/**
 * The connection as dataVersionOf sees it, with a hook around each read of the pragma: `around`
 * may throw instead of reading, or let another connection commit right after the read.
 */
function withPragmaHook(db: BetterSqlite3.Database, around: (read: () => number) => number) {
  return new Proxy(db, {
    get(target, key) {
      if (key === 'prepare')
        return (sql: string) => {
          const statement = target.prepare(sql)
          if (sql !== 'PRAGMA data_version') return statement
          const plucked = statement.pluck()
          return { pluck: () => ({ get: () => around(() => plucked.get() as number) }) }
        }
      const value = Reflect.get(target, key, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

t.test('a read of the pragma that failed leaves nothing remembered: the next request reads it again', async (t) => {
  const { db, other } = twoConnections(t, 'fail.db')
  let fail = false
  const read = dataVersionOf(
    withPragmaHook(db, (real) => {
      if (fail) throw new Error('SQLITE_IOERR (made up)')
      return real()
    }),
  )
  const before = read()
  await nextTurn()
  t.equal(read(), before, 'nothing committed')
  other.prepare('INSERT INTO t VALUES (1)').run()
  await nextTurn()
  fail = true
  t.throws(() => read(), /made up/)
  fail = false
  await nextTurn()
  t.not(read(), before, 'the commit is seen once the pragma answers again')
})

t.test('a commit right after the pragma was read is seen by the next request', async (t) => {
  const { db, other } = twoConnections(t, 'race.db')
  let commitAfterRead = false
  const read = dataVersionOf(
    withPragmaHook(db, (real) => {
      const value = real()
      if (commitAfterRead) other.prepare('INSERT INTO t VALUES (1)').run()
      return value
    }),
  )
  read()
  other.prepare('INSERT INTO t VALUES (0)').run() // the next request must read the pragma
  await nextTurn()
  commitAfterRead = true
  const before = read()
  commitAfterRead = false
  await nextTurn()
  t.not(read(), before, 'the commit that landed after the read')
})

t.test('inside a transaction the pragma is read and not remembered', async (t) => {
  const { db, other } = twoConnections(t, 'inside.db')
  const read = dataVersionOf(db)
  const before = read()
  await nextTurn()
  db.exec('BEGIN')
  db.prepare('SELECT count(*) FROM t').get() // the transaction's snapshot starts here
  other.prepare('INSERT INTO t VALUES (1)').run()
  t.equal(read(), before, "the transaction's snapshot")
  await nextTurn()
  db.exec('COMMIT')
  t.not(read(), before, 'the file as it is, once the transaction ended')
})

t.test("the turn's read snapshot: requests read in it while it is the file, and it ends with the turn", async (t) => {
  const { db, other } = twoConnections(t, 'snapshot.db')
  const read = dataVersionOf(db)
  const rows = db.prepare('SELECT count(*) FROM t').pluck()
  const first = read()
  t.ok(db.inTransaction, 'the first request of a turn opens it')
  t.equal(rows.get(), 0)
  other.prepare('INSERT INTO t VALUES (1)').run()
  await Promise.resolve() // the next request, in the same turn
  t.not(read(), first, "another connection's commit, seen by the next request")
  t.equal(rows.get(), 1, 'which reads in a snapshot that has the row')
  await nextTurn()
  t.notOk(db.inTransaction, 'the turn ended it: no read lock held while the server waits')
})

t.test('the write queue ends the read snapshot before its own transaction', async (t) => {
  const { db, other } = twoConnections(t, 'queue.db')
  const queue = createWriteQueue(db, { storage: new StorageState(), busyTimeoutMs: 1000 })
  const waits: string[] = []
  queue.onBusy((event) => waits.push(event.state))
  const read = dataVersionOf(db)
  const write = queue.run(() => db.prepare('INSERT INTO t VALUES (2)').run().changes)
  read() // opened after the write was queued: it is still open when the batch runs
  other.prepare('INSERT INTO t VALUES (3)').run() // a write inside the snapshot could not commit now
  t.equal(await write, 1)
  t.same(waits, [], 'at once: no lock wait (BEGIN IMMEDIATE inside the snapshot would meet one)')
  t.equal(other.prepare('SELECT count(*) FROM t').pluck().get(), 2, 'both rows, committed')
})

// A revocation between two requests of one turn, the stream's ticket among them: test/db/turn-check.test.ts.

t.test(
  'a write outside the write queue ends the read snapshot and is on disk when it returns; a stray one is told',
  async (t) => {
    const path = join(t.testdir(), 'beds.db')
    const { app } = await buildTestApp(t, { DATABASE_PATH: path })
    const other = new BetterSqlite3(path)
    t.teardown(() => other.close())
    await nextTurn()
    dataVersionOf(app.db)() // a request of this turn opened the snapshot
    t.ok(app.db.inTransaction)
    t.ok(app.repos.beds.add({ facility: 'A', bed: 'B-1' }))
    t.equal(other.prepare('SELECT count(*) FROM kept_beds').pluck().get(), 1, 'committed, seen by another connection')
    await Promise.resolve() // the next request of the turn opens a snapshot again
    dataVersionOf(app.db)()
    t.ok(app.db.inTransaction)
    let strays = 0
    onStrayWrite(app.db, () => strays++)
    app.db.prepare("INSERT INTO kept_beds (facility, bed, room, created_at) VALUES ('A', 'B-2', NULL, 0)").run()
    await nextTurn()
    t.equal(strays, 1, 'a write that did not end the snapshot is told when the turn ends it')
    t.equal(other.prepare('SELECT count(*) FROM kept_beds').pluck().get(), 2, 'and committed then')
  },
)

t.test('closing the server gives back its descriptor of the -shm file', async (t) => {
  const path = join(t.testdir(), 'closed.db')
  const { app, tokens } = await buildTestApp(t, { DATABASE_PATH: path })
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(tokens.read) })).statusCode, 200)
  const shmOpen = () =>
    readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`).startsWith(`${path}-shm`)
      } catch {
        return false
      }
    }).length
  t.ok(shmOpen() >= 2, "SQLite's and the watch's")
  await app.close()
  t.equal(shmOpen(), 0)
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
          // Another process checkpoints between the server's turns: in this thread, a checkpoint
          // that waited for the turn's read snapshot to end would wait for its busy timeout.
          if (s === 'checkpoint' || s === 'truncate') await nextTurn()
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
