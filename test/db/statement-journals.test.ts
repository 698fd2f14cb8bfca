import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t, { type Test } from 'tap'
import { StorageState } from '../../db/storage-faults.js'
import { createWriteQueue } from '../../db/write-queue.js'
import { bearer, buildTestApp } from '../helper.js'

// SQLite's temporary files are unlinked as soon as they are open (the process still holds them):
// those opened since `before`, by the links of this process's descriptors.
function deletedFilesOpen(): Set<string> {
  return new Set(
    readdirSync('/proc/self/fd').flatMap((fd) => {
      try {
        const target = readlinkSync(`/proc/self/fd/${fd}`)
        return target.endsWith(' (deleted)') ? [`${fd} ${target}`] : []
      } catch {
        return [] // closed meanwhile
      }
    }),
  )
}

function openedSince(before: Set<string>): string[] {
  return [...deletedFilesOpen()].filter((file) => !before.has(file))
}

/**
 * A file database in WAL mode, as the server opens its own: 4 000 notes under a unique index, and a
 * trigger that counts their changes in another table (so an update is a statement that writes two
 * tables and may fail halfway: SQLite gives it a statement journal, as it does a create's inserts).
 */
function open(t: Test) {
  const dir = mkdtempSync(join(tmpdir(), 'statement-journals-'))
  const db = new BetterSqlite3(join(dir, 'notes.db'))
  t.teardown(() => {
    db.close()
    rmSync(dir, { recursive: true, force: true })
  })
  db.pragma('journal_mode = WAL')
  db.pragma('busy_timeout = 0') // as the server's: BEGIN fails at once when another holds the lock
  db.exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE);
    CREATE TABLE changes (n INTEGER NOT NULL);
    INSERT INTO changes VALUES (0);
    CREATE TRIGGER notes_counted AFTER UPDATE ON notes BEGIN UPDATE changes SET n = n + 1; END;`)
  const insert = db.prepare('INSERT INTO notes (text) VALUES (?)')
  db.transaction(() => {
    for (let i = 0; i < 4000; i++) insert.run(`note ${i} ${'x'.repeat(200)}`)
  })()
  const queue = createWriteQueue(db, { storage: new StorageState(), busyTimeoutMs: 5000 })
  const tempStore = () => db.pragma('temp_store', { simple: true })
  return { db, queue, tempStore }
}

t.test("a write's statement journal stays in memory, however many pages it covers", async (t) => {
  const { db, queue } = open(t)
  // Every row of a unique index changes in one statement that may fail halfway: SQLite journals
  // each page it touches (about 2 MB here, far past the 64 KiB it keeps in memory by default).
  const update = db.prepare("UPDATE notes SET text = text || '.'")
  const before = deletedFilesOpen()
  const seen = await queue.run(() => {
    update.run()
    return openedSince(before)
  })
  t.same(seen, [], 'no temporary file was opened for it')
  t.equal(db.prepare('SELECT count(*) FROM notes WHERE text LIKE ?').pluck().get('%.'), 4000, 'the update committed')
})

t.test('the same statement outside the queue spills to a temporary file (what the queue avoids)', async (t) => {
  const { db } = open(t)
  const update = db.prepare("UPDATE notes SET text = text || '.'")
  const before = deletedFilesOpen()
  const seen = db.transaction(() => {
    update.run()
    return openedSince(before)
  })()
  t.ok(seen.length > 0, `SQLite's default journals it in a file: ${seen.join(', ')}`)
})

t.test('reads keep the default (a large sort spills to a file, not the heap), whatever the batch did', async (t) => {
  const { db, queue, tempStore } = open(t)
  const insert = db.prepare('INSERT INTO notes (text) VALUES (?)')
  t.equal(await queue.run(tempStore), 2, 'MEMORY inside the write transaction')
  t.equal(tempStore(), 0, 'DEFAULT after the commit')

  const failed = queue.run(() => {
    insert.run('half done')
    insert.run('note 1 ') // a new text, then a duplicate: fails after changing something
    insert.run(`note 1 ${'x'.repeat(200)}`)
  })
  await t.rejects(failed, { code: 'SQLITE_CONSTRAINT_UNIQUE' })
  t.equal(tempStore(), 0, 'DEFAULT after a batch rolled back and ran again')

  // Another connection holds the write lock: BEGIN IMMEDIATE is refused and the batch waits.
  const other = new BetterSqlite3(db.name)
  t.teardown(() => other.close())
  other.exec('BEGIN IMMEDIATE')
  const waiting = queue.run(() => insert.run('after the lock'))
  await new Promise((resolve) => setTimeout(resolve, 20))
  t.equal(tempStore(), 0, 'DEFAULT while the batch waits for the lock')
  other.exec('COMMIT')
  await waiting
  t.equal(tempStore(), 0)
})

t.test(
  "the server's connection never opens a temporary database (switching the setting stays a flag flip)",
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'statement-journals-app-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    const { app, tokens } = await buildTestApp(t, { DATABASE_PATH: join(dir, 'facility.db') })
    const admit = (bed: string) =>
      app.inject({
        method: 'POST',
        url: '/ward-occupants',
        headers: bearer(tokens.writeA),
        payload: { encounter: `enc-${bed}`, bed, occupiedBy: `patient-${bed}` },
      })
    const admitted = await Promise.all(['B-1', 'B-2', 'B-3'].map(admit))
    for (const res of admitted) t.equal(res.statusCode, 200, res.body)
    const first = admitted[0]
    if (!first) throw new Error('three admissions were sent')
    const { id } = first.json() as { id: string }
    const reads = [
      '/ward-occupants?$limit=2&$skip=1&$sort[bed]=-1',
      `/ward-occupants/${id}`,
      '/beds',
      '/notifications?$limit=5',
      '/notifications/unseen-count',
    ]
    for (const url of reads) {
      const res = await app.inject({ url, headers: bearer(tokens.writeA) })
      t.ok(res.statusCode < 300, `${url}: ${res.statusCode} ${res.body.slice(0, 200)}`)
    }
    const discharged = await app.inject({
      method: 'PATCH',
      url: `/ward-occupants/${id}`,
      headers: bearer(tokens.writeA),
      payload: { discharge: true },
    })
    t.equal(discharged.statusCode, 200, discharged.body)
    const databases = app.db.pragma('database_list') as { name: string }[]
    t.same(
      databases.map((row) => row.name),
      ['main'],
    )
    t.equal(app.db.pragma('temp_store', { simple: true }), 0)
  },
)

t.test('a setting the connection had before is what it gets back', async (t) => {
  const { db } = open(t)
  db.pragma('temp_store = FILE')
  const queue = createWriteQueue(db, { storage: new StorageState(), busyTimeoutMs: 5000 })
  t.equal(await queue.run(() => db.pragma('temp_store', { simple: true })), 2)
  t.equal(db.pragma('temp_store', { simple: true }), 1, 'FILE again, not the default')
})
