import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { openDatabase } from '../../db/connection.js'
import { createTokenRepository } from '../../db/tokens.js'
import { startServer, stopServer } from './server-process.js'

// `npm run crash-test` runs more rounds; the regular suite runs a few.
const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 3)
const WRITERS = 8

async function streamCreates(base: string, token: string, round: number, acknowledged: string[]): Promise<void> {
  let n = 0
  async function writer(w: number): Promise<void> {
    for (;;) {
      const bed = `r${round}-w${w}-${n++}`
      let res: Response
      try {
        res = await fetch(`${base}/ward-occupants`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ encounter: `enc-${bed}`, bed, occupiedBy: 'patient' }),
        })
      } catch {
        return // the server is gone: stop writing
      }
      if (res.status !== 200) return
      acknowledged.push(((await res.json()) as { id: string }).id)
    }
  }
  await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)))
}

t.test(`every acknowledged write survives SIGKILL (${ROUNDS} rounds)`, async (t) => {
  const path = join(t.testdir(), 'crash.db')
  const setup = openDatabase(path)
  const { token } = createTokenRepository(setup).create({ account: 'crash', role: 'write' })
  setup.close()
  const acknowledged: string[] = []

  for (let round = 0; round < ROUNDS; round++) {
    const server = await startServer({ DATABASE_PATH: path })
    const streaming = streamCreates(server.base, token, round, acknowledged)
    await new Promise((resolve) => setTimeout(resolve, 300 + Math.random() * 500))
    await stopServer(server, 'SIGKILL')
    await streaming
  }
  t.ok(acknowledged.length > ROUNDS, `${acknowledged.length} writes acknowledged`)

  const check = new BetterSqlite3(path)
  t.equal(check.pragma('integrity_check', { simple: true }), 'ok', 'integrity_check is ok')
  check.close()

  const server = await startServer({ DATABASE_PATH: path })
  t.teardown(() => stopServer(server))
  let found = 0
  for (let i = 0; i < acknowledged.length; i += 200) {
    const ids = acknowledged.slice(i, i + 200)
    const query = ids.map((id) => `id[$in][]=${id}`).join('&')
    const res = await fetch(`${server.base}/ward-occupants?$limit=1000&$select[]=id&${query}`, {
      headers: { authorization: `Bearer ${token}` },
    })
    found += ((await res.json()) as { total: number }).total
  }
  t.equal(found, acknowledged.length, 'every acknowledged record is there after restart')
})
