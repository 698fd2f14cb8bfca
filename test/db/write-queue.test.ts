import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t, { type Test } from 'tap'
import { StorageState } from '../../db/storage-faults.js'
import { createWriteQueue } from '../../db/write-queue.js'

function open(t: Test) {
  const db = new BetterSqlite3(':memory:')
  db.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE)')
  t.teardown(() => db.close())
  const insert = db.prepare('INSERT INTO notes (text) VALUES (?)')
  const texts = () => db.prepare('SELECT text FROM notes ORDER BY id').pluck().all()
  return { db, insert, texts }
}

t.test('writes of one turn commit together, each answering its own result', async (t) => {
  const { db, insert, texts } = open(t)
  const queue = createWriteQueue(db, { storage: new StorageState(), busyTimeoutMs: 5000 })
  const seen: boolean[] = []
  const results = await Promise.all(
    ['a', 'b', 'c'].map((text) =>
      queue.run(() => {
        seen.push(db.inTransaction)
        return insert.run(text).lastInsertRowid
      }),
    ),
  )
  t.same(results, [1, 2, 3])
  t.same(seen, [true, true, true], 'each write runs inside the one transaction')
  t.notOk(db.inTransaction, 'committed')
  t.same(texts(), ['a', 'b', 'c'])
})

t.test('a failing write rolls back alone and rejects alone', async (t) => {
  const { db, insert, texts } = open(t)
  const queue = createWriteQueue(db, { storage: new StorageState(), busyTimeoutMs: 5000 })
  const outcomes = await Promise.allSettled([
    queue.run(() => insert.run('a')),
    queue.run(() => {
      insert.run('half done')
      insert.run('a') // UNIQUE: this write fails after a first insert
    }),
    queue.run(() => insert.run('c')),
  ])
  t.same(
    outcomes.map((o) => o.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  )
  t.match((outcomes[1] as PromiseRejectedResult).reason, { code: 'SQLITE_CONSTRAINT_UNIQUE' })
  t.same(texts(), ['a', 'c'], 'nothing of the failed write is stored')
})

t.test('when SQLite drops the whole transaction, the other writes run again and commit', async (t) => {
  const { db, insert, texts } = open(t)
  const queue = createWriteQueue(db, { storage: new StorageState(), busyTimeoutMs: 5000 })
  let runs = 0
  const outcomes = await Promise.allSettled([
    queue.run(() => {
      runs++
      return insert.run('kept').changes
    }),
    queue.run(() => {
      db.exec('ROLLBACK') // what a disk-full or I/O error does to the transaction
      throw new Error('disk full')
    }),
    queue.run(() => insert.run('after').changes),
  ])
  t.same(
    outcomes.map((o) => o.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  )
  t.match((outcomes[1] as PromiseRejectedResult).reason, { message: 'disk full' })
  t.equal(runs, 2, 'the first write ran again after the rollback')
  t.same(texts(), ['kept', 'after'])
})

t.test('a write that fails before changing anything costs the others nothing', async (t) => {
  const { db, insert, texts } = open(t)
  const queue = createWriteQueue(db, { storage: new StorageState(), busyTimeoutMs: 5000 })
  let runs = 0
  const outcomes = await Promise.allSettled([
    queue.run(() => {
      runs++
      return insert.run('a')
    }),
    queue.run(() => insert.run('a')), // refused by the UNIQUE constraint: nothing to undo
    queue.run(() => {
      throw new Error('404')
    }),
  ])
  t.same(
    outcomes.map((o) => o.status),
    ['fulfilled', 'rejected', 'rejected'],
  )
  t.equal(runs, 1, 'no write ran twice')
  t.same(texts(), ['a'])
})

t.test('when the batch cannot begin, every write of it is refused', async (t) => {
  const { db, insert, texts } = open(t)
  const queue = createWriteQueue(db, { storage: new StorageState(), busyTimeoutMs: 5000 })
  db.exec('BEGIN') // someone else's transaction is open: BEGIN IMMEDIATE fails
  const outcomes = await Promise.allSettled([queue.run(() => insert.run('x')), queue.run(() => insert.run('y'))])
  t.same(
    outcomes.map((o) => o.status),
    ['rejected', 'rejected'],
  )
  t.notOk(db.inTransaction)
  t.same(texts(), [])
  t.same(await queue.run(() => insert.run('z').changes), 1, 'the next batch works')
})

t.test(
  "writes that meet another connection's lock wait off the event loop, then commit together, in order",
  async (t) => {
    const path = join(t.testdir(), 'lock.db')
    const db = new BetterSqlite3(path)
    t.teardown(() => db.close())
    db.pragma('journal_mode = WAL')
    db.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)')
    db.pragma('busy_timeout = 0')
    const other = new BetterSqlite3(path)
    t.teardown(() => other.close())
    other.exec('BEGIN IMMEDIATE')
    const queue = createWriteQueue(db, { storage: new StorageState(), busyTimeoutMs: 60_000 })
    let commits = 0
    queue.onCommit(() => commits++)
    const insert = db.prepare('INSERT INTO notes (text) VALUES (?)')
    const first = queue.run(() => insert.run('a').lastInsertRowid)
    while (queue.waitingSince === null) await new Promise((resolve) => setImmediate(resolve))
    // Queued while the first waits: they join its batch, behind it.
    const rest = [queue.run(() => insert.run('b').lastInsertRowid), queue.run(() => insert.run('c').lastInsertRowid)]
    let turns = 0
    while (turns < 20) {
      await new Promise((resolve) => setTimeout(resolve, 1))
      turns++ // the event loop turns while the lock is held
    }
    t.equal(commits, 0, 'nothing committed while the lock is held')
    other.exec('COMMIT')
    t.same(await Promise.all([first, ...rest]), [1, 2, 3], 'in the order they were queued')
    t.equal(commits, 1, 'in one group commit')
    t.equal(queue.waitingSince, null)
  },
)

t.test('a write waits at most busyTimeoutMs from when it was queued, then is refused DATABASE_BUSY', async (t) => {
  const path = join(t.testdir(), 'lock.db')
  const db = new BetterSqlite3(path)
  t.teardown(() => db.close())
  db.pragma('journal_mode = WAL')
  db.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)')
  db.pragma('busy_timeout = 0')
  const other = new BetterSqlite3(path)
  t.teardown(() => other.close())
  other.exec('BEGIN IMMEDIATE')
  const queue = createWriteQueue(db, { storage: new StorageState(), busyTimeoutMs: 20 })
  const events: string[] = []
  queue.onBusy((e) => events.push(e.state))
  await t.rejects(
    queue.run(() => db.prepare('INSERT INTO notes (text) VALUES (?)').run('x')),
    { code: 'DATABASE_BUSY', statusCode: 503 },
  )
  t.ok(other.inTransaction, 'refused while the lock is still held')
  t.same(events, ['waiting', 'gave-up'])
  other.exec('ROLLBACK')
  t.equal(await queue.run(() => db.prepare('INSERT INTO notes (text) VALUES (?)').run('y').changes), 1)
  t.same(db.prepare('SELECT text FROM notes').pluck().all(), ['y'])
})

t.test(
  "the app's repositories share one write queue: writes of one turn to several resources commit once",
  async (t) => {
    const { buildTestApp, bearer } = await import('../helper.js')
    const { app, tokens } = await buildTestApp(t)
    let commits = 0
    app.writes.onCommit(() => commits++)
    const headers = bearer(tokens.write)
    const answers = await Promise.all([
      app.inject({
        method: 'POST',
        url: '/ward-occupants',
        headers,
        payload: { encounter: 'e-1', bed: 'B-1', occupiedBy: 'p-1' },
      }),
      app.inject({ method: 'POST', url: '/form-templates', headers, payload: { type: 'intake' } }),
    ])
    t.same(
      answers.map((answer) => answer.statusCode),
      [200, 200],
    )
    t.equal(commits, 1, 'one group commit for both writes (and the notification the admission produced)')
  },
)
