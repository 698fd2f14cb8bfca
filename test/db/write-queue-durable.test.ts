import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t, { type Test } from 'tap'
import { StorageState } from '../../db/storage-faults.js'
import { openWalSync, type WalSync } from '../../db/wal-sync.js'
import { createWriteQueue } from '../../db/write-queue.js'

/** A sync the test finishes by hand: each call waits until `finish` (or `fail`) is called. */
function gatedSync() {
  const calls: { resolve: () => void; reject: (error: Error) => void }[] = []
  const sync: WalSync = {
    sync: () => new Promise<void>((resolve, reject) => calls.push({ resolve, reject })),
    close: () => {},
  }
  return {
    sync,
    calls,
    finish: () => calls.shift()?.resolve(),
    fail: () => calls.shift()?.reject(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' })),
  }
}

function open(t: Test, walSync: WalSync) {
  const db = new BetterSqlite3(':memory:')
  db.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE)')
  t.teardown(() => db.close())
  const insert = db.prepare('INSERT INTO notes (text) VALUES (?)')
  const storage = new StorageState()
  const queue = createWriteQueue(db, { storage, busyTimeoutMs: 5000, walSync })
  return { db, insert, storage, queue }
}

const turn = () => new Promise((resolve) => setImmediate(resolve))

/** Which of the promises have settled so far, without waiting for the others. */
async function settledOf(promises: Promise<unknown>[]): Promise<boolean[]> {
  const state = promises.map(() => false)
  for (const [i, p] of promises.entries()) {
    const mark = () => {
      state[i] = true
    }
    p.then(mark, mark)
  }
  await turn()
  return state
}

t.test('a write is answered only after the sync that covers its commit', async (t) => {
  const gate = gatedSync()
  const { insert, queue } = open(t, gate.sync)
  t.equal(queue.whenDurable(), undefined, 'nothing to wait for before any commit')
  const writes = [queue.run(() => insert.run('a').changes), queue.run(() => insert.run('b').changes)]
  await turn()
  t.equal(gate.calls.length, 1, 'one sync for the batch')
  t.same(await settledOf(writes), [false, false], 'committed, but not answered before the disk has it')
  t.ok(queue.whenDurable(), 'readers are told to wait meanwhile')
  gate.finish()
  t.same(await Promise.all(writes), [1, 1])
  t.equal(queue.whenDurable(), undefined, 'everything on disk')
})

t.test('one sync at a time, each covering the commits made before it started', async (t) => {
  const gate = gatedSync()
  const { insert, queue } = open(t, gate.sync)
  const first = queue.run(() => insert.run('a'))
  await turn()
  const second = queue.run(() => insert.run('b'))
  await turn()
  t.equal(gate.calls.length, 1, 'the second commit waits for the running sync to end')
  gate.finish()
  await first
  t.same(await settledOf([second]), [false], 'the first sync began before the second commit')
  t.equal(gate.calls.length, 1, 'so a second sync runs for it')
  gate.finish()
  await second
})

t.test('writes that arrive while a sync runs wait for it to end, then commit together in one batch', async (t) => {
  const gate = gatedSync()
  const { db, insert, queue } = open(t, gate.sync)
  const stored = db.prepare<[], number>('SELECT count(*) FROM notes').pluck()
  const batches: number[] = []
  queue.onBatch((batch) => batches.push(batch.writes))
  const first = queue.run(() => insert.run('a'))
  await turn()
  // Two more writes, in two later turns of the event loop, while the first batch's sync runs.
  const later = [queue.run(() => insert.run('b'))]
  await turn()
  later.push(queue.run(() => insert.run('c')))
  await turn()
  t.equal(stored.get(), 1, 'nothing more is committed while the sync runs')
  t.equal(queue.depth, 2, 'the two wait in the queue')
  gate.finish()
  await first
  await turn()
  t.equal(stored.get(), 3, 'committed once it ended')
  t.equal(gate.calls.length, 1, 'and one sync runs for both')
  t.same(await settledOf(later), [false, false], 'answered only once that sync returns')
  gate.finish()
  await Promise.all(later)
  t.same(batches, [1, 2], 'one batch of one, then one of two')
})

t.test('settled() also commits and syncs the writes that waited for the running sync', async (t) => {
  const gate = gatedSync()
  const { db, insert, queue } = open(t, gate.sync)
  void queue.run(() => insert.run('a'))
  await turn()
  const waiting = queue.run(() => insert.run('b'))
  await turn()
  // As plugins/db.ts does: the connection closes as soon as settled() returns.
  const closed = queue.settled().then(() => db.close())
  gate.finish()
  while (gate.calls.length === 0 && db.open) await turn()
  gate.finish()
  await closed
  t.same(await waiting, { changes: 1, lastInsertRowid: 2 }, 'the write that waited is stored before the close')
})

/** A file database in WAL mode and a second connection on it, as another process (the CLI) holds one. */
function openWithNeighbour(t: Test, walSync: WalSync, busyTimeoutMs: number) {
  const path = join(t.testdir(), 'lock.db')
  const db = new BetterSqlite3(path)
  db.pragma('journal_mode = WAL')
  db.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)')
  db.pragma('busy_timeout = 0')
  const other = new BetterSqlite3(path)
  t.teardown(() => {
    other.close()
    db.close()
  })
  const insert = db.prepare('INSERT INTO notes (text) VALUES (?)')
  return { db, other, insert, queue: createWriteQueue(db, { storage: new StorageState(), busyTimeoutMs, walSync }) }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

t.test("the wait for a slow sync does not use up a write's busy timeout", async (t) => {
  const gate = gatedSync()
  const { other, insert, queue } = openWithNeighbour(t, gate.sync, 200)
  const first = queue.run(() => insert.run('a'))
  await turn()
  const second = queue.run(() => insert.run('b').changes)
  await sleep(250) // the sync takes longer than the busy timeout
  other.exec('BEGIN IMMEDIATE') // then another process holds the lock for 10 ms
  setTimeout(() => other.exec('ROLLBACK'), 10)
  gate.finish()
  await first
  while (gate.calls.length === 0 && (await settledOf([second]))[0] === false) await sleep(2)
  gate.finish()
  t.equal(await second, 1, 'it waited for the lock, and was stored')
})

t.test('settled() waits out a lock met by the writes that waited for the sync, then they are stored', async (t) => {
  const gate = gatedSync()
  const { db, other, insert, queue } = openWithNeighbour(t, gate.sync, 5000)
  void queue.run(() => insert.run('a'))
  await turn()
  const waiting = queue.run(() => insert.run('b').changes)
  await turn()
  const closed = queue.settled().then(() => db.close())
  other.exec('BEGIN IMMEDIATE')
  setTimeout(() => other.exec('ROLLBACK'), 20)
  gate.finish()
  while (db.open) {
    if (gate.calls.length > 0) gate.finish()
    await sleep(2)
  }
  await closed
  t.equal(await waiting, 1, 'stored before the connection closed')
})

t.test('writes waiting for a sync that fails are refused, never committed', async (t) => {
  const gate = gatedSync()
  const { db, insert, queue } = open(t, gate.sync)
  const first = queue.run(() => insert.run('a'))
  await turn()
  const waiting = queue.run(() => insert.run('b'))
  await turn()
  gate.fail()
  await t.rejects(first, { code: 'STORAGE_IO_ERROR' })
  await t.rejects(waiting, { code: 'STORAGE_IO_ERROR' }, 'the write that waited is refused')
  t.same(db.prepare('SELECT text FROM notes').pluck().all(), ['a'], 'and nothing of it was written')
})

t.test('a write that changed nothing waits for what earlier batches committed', async (t) => {
  const gate = gatedSync()
  const { db, insert, queue } = open(t, gate.sync)
  const stored = queue.run(() => insert.run('a'))
  await turn()
  // It reads what the first batch committed, which is not on disk yet.
  const read = queue.run(() => db.prepare('SELECT text FROM notes').pluck().get())
  await turn()
  t.same(await settledOf([stored, read]), [false, false])
  gate.finish()
  t.same(await Promise.all([stored.then(() => 'ok'), read]), ['ok', 'a'])
})

t.test(
  'a failed sync is never trusted again: its writes, readers and every later write are refused until a restart',
  async (t) => {
    const gate = gatedSync()
    const { insert, storage, queue } = open(t, gate.sync)
    const write = queue.run(() => insert.run('a'))
    await turn()
    const reader = queue.whenDurable()
    gate.fail()
    await t.rejects(write, { code: 'STORAGE_IO_ERROR', statusCode: 503, message: /may or may not be stored/ })
    await t.rejects(reader as Promise<void>, { code: 'STORAGE_IO_ERROR' })
    t.match(storage.condition, { fault: 'io', code: 'SQLITE_IOERR_FSYNC', latched: true }, '/health tells')
    await t.rejects(
      queue.run(() => insert.run('b')),
      { code: 'STORAGE_IO_ERROR' },
      'later writes are refused',
    )
    await t.rejects(queue.whenDurable() as Promise<void>, { code: 'STORAGE_IO_ERROR' }, 'and every answer')
    t.equal(gate.calls.length, 0, 'no sync runs again: a later success would prove nothing')
    storage.recovered()
    t.ok(storage.condition?.latched, 'nothing clears it but a restart')
  },
)

t.test('settled() waits for the running sync (the connection closes after it)', async (t) => {
  const gate = gatedSync()
  const { insert, queue } = open(t, gate.sync)
  void queue.run(() => insert.run('a'))
  await turn()
  let done = false
  const settled = queue.settled().then(() => {
    done = true
  })
  await turn()
  t.notOk(done)
  gate.finish()
  await settled
  t.ok(done)
})

t.test('the real sync: the WAL file SQLite writes, found through a symbolic link, and never another', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'wal-sync-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  mkdirSync(join(dir, 'data'))
  const path = join(dir, 'data', 'x.db')
  const link = join(dir, 'link.db')
  symlinkSync(path, link)
  const db = new BetterSqlite3(link)
  t.teardown(() => db.close())
  db.pragma('journal_mode = WAL')
  db.exec('CREATE TABLE n (v)')
  // A stale WAL beside the link: syncing it would prove nothing.
  writeFileSync(`${link}-wal`, '')
  const sync = openWalSync(link)
  t.teardown(() => sync.close())
  await sync.sync()
  t.throws(() => openWalSync(join(dir, 'other.db')), /ENOENT/)
  writeFileSync(join(dir, 'lone.db-wal'), '')
  writeFileSync(join(dir, 'lone.db'), '')
  t.throws(() => openWalSync(join(dir, 'lone.db')), /not the WAL file the database connection writes/)
  rmSync(`${path}-wal`)
  await t.rejects(sync.sync(), /removed under the server/)
})
