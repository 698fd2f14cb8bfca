import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { openDatabase } from '../../db/connection.js'
import { createTokenRepository } from '../../db/repositories/tokens.js'
import { openStream } from '../feed/helpers.js'
import { startServer, stopServer } from './server-process.js'

const WRITERS = 6

async function writeUntilGone(base: string, token: string, acknowledged: string[]): Promise<void> {
  let n = 0
  async function writer(w: number): Promise<void> {
    for (;;) {
      const bed = `w${w}-${n++}`
      try {
        const res = await fetch(`${base}/ward-occupants`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ encounter: `enc-${bed}`, bed, occupiedBy: 'patient' }),
        })
        if (res.status !== 200) throw new Error(`write answered ${res.status}: ${await res.text()}`)
        acknowledged.push(((await res.json()) as { id: string }).id)
      } catch (error) {
        if (error instanceof TypeError) return // fetch failed: the server is gone
        throw error
      }
    }
  }
  await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)))
}

/**
 * SIGKILL while a stream is receiving a burst of writes; after the restart the client resumes from
 * the last id it received. What it assembles across the two connections must be every committed
 * create, in commit order, once: the oracle is the audit log read straight from the file.
 */
t.test('a crash mid-stream loses nothing: resuming gives every change committed after the last id', async (t) => {
  const path = join(t.testdir(), 'feed-crash.db')
  const setup = openDatabase(path)
  const { token } = createTokenRepository(setup).create({ account: 'crash', role: 'write' })
  setup.close()
  const auth = { authorization: `Bearer ${token}` }

  const first = await startServer({ DATABASE_PATH: path })
  const before = await openStream(`${first.base}/events?resources=ward-occupants`, auth)
  const acknowledged: string[] = []
  const writing = writeUntilGone(first.base, token, acknowledged)
  // An event and its write's answer leave after the same sync, in either order: wait for both.
  await before.until(
    (s) => s.changes().length >= 50 && acknowledged.length >= 50,
    20_000,
    'a first burst of events and answers',
  )
  await stopServer(first, 'SIGKILL')
  await writing
  await before.until((s) => s.ended)
  const lastId = before.lastId() as string
  t.ok(acknowledged.length >= 50, `${acknowledged.length} writes acknowledged before the kill`)

  const second = await startServer({ DATABASE_PATH: path })
  t.teardown(() => stopServer(second))
  const after = await openStream(`${second.base}/events?resources=ward-occupants`, { ...auth, 'last-event-id': lastId })
  t.teardown(() => after.close())
  const sentinel = await fetch(`${second.base}/ward-occupants`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ encounter: 'end', bed: 'end', occupiedBy: 'patient' }),
  })
  const sentinelId = ((await sentinel.json()) as { id: string }).id
  await after.until((s) => s.changes().some((e) => JSON.parse(e.data).id === sentinelId), 20_000, 'the sentinel')

  const assembled = [...before.changes(), ...after.changes()].map((e) => JSON.parse(e.data).id as string)
  const db = new BetterSqlite3(path, { readonly: true })
  const committed = db
    .prepare<[], string>(`SELECT record_id FROM audit_log WHERE resource = 'ward-occupants' ORDER BY seq`)
    .pluck()
    .all()
  db.close()
  t.same(assembled, committed, 'every committed create, in commit order, exactly once')
  const received = new Set(assembled)
  t.ok(
    acknowledged.every((id) => received.has(id)),
    'every acknowledged write reached the client',
  )
})

t.test('SIGTERM ends open streams cleanly and the process exits 0', async (t) => {
  const path = join(t.testdir(), 'feed-term.db')
  const setup = openDatabase(path)
  const { token } = createTokenRepository(setup).create({ account: 'term', role: 'read' })
  setup.close()
  const server = await startServer({ DATABASE_PATH: path })
  const streams = await Promise.all(
    [1, 2, 3].map(() => openStream(`${server.base}/events`, { authorization: `Bearer ${token}` })),
  )
  t.equal(await stopServer(server, 'SIGTERM'), 0, 'exit code 0')
  for (const stream of streams) {
    await stream.until((s) => s.ended)
    t.notOk(stream.errored, 'each stream got a clean end')
  }
})
