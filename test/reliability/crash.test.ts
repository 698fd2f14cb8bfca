import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { openDatabase } from '../../db/connection.js'
import { createTokenRepository } from '../../db/repositories/tokens.js'
import { startServer, stopServer } from './server-process.js'

// `npm run crash-test` runs more rounds; the regular suite runs a few.
const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 3)
const WRITERS = 8
/** Each round is killed only after this many writes were acknowledged in it, while writes are in flight. */
const FLOOR = 40

interface Round {
  acknowledged: string[]
  /** Requests the kill cut off (no answer): proves the kill came while writes were in flight. */
  cut: number
  /** Any answer but 200: the service refused or failed a write it should have taken. */
  unexpected: string[]
  stop: boolean
}

function streamCreates(base: string, token: string, round: number, state: Round): Promise<void> {
  let n = 0
  async function writer(w: number): Promise<void> {
    while (!state.stop) {
      const bed = `r${round}-w${w}-${n++}`
      let res: Response
      try {
        res = await fetch(`${base}/ward-occupants`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ encounter: `enc-${bed}`, bed, occupiedBy: 'patient' }),
        })
      } catch {
        state.cut++
        return // the server is gone: stop writing
      }
      // The kill may land between an answer's head and its body: the write is not acknowledged, and
      // the reading fails like the request would have (not an error of the test, as it was).
      let body: string
      try {
        body = await res.text()
      } catch {
        state.cut++
        return
      }
      if (res.status !== 200) {
        state.unexpected.push(`${res.status} ${body}`)
        return
      }
      state.acknowledged.push((JSON.parse(body) as { id: string }).id)
    }
  }
  return Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w))).then(() => {})
}

/** Resolves once `round` has FLOOR acknowledged writes; fails after 60 s or when every writer stopped. */
async function progress(round: Round, streaming: Promise<void>): Promise<void> {
  let done = false
  void streaming.then(() => {
    done = true
  })
  const deadline = Date.now() + 60_000
  while (round.acknowledged.length < FLOOR) {
    if (done || Date.now() > deadline) {
      round.stop = true
      throw new Error(
        `only ${round.acknowledged.length} writes acknowledged; ${round.unexpected.slice(0, 3).join('; ')}`,
      )
    }
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

t.test(`every acknowledged write survives SIGKILL (${ROUNDS} rounds)`, async (t) => {
  const path = join(t.testdir(), 'crash.db')
  const setup = openDatabase(path)
  const { token } = createTokenRepository(setup).create({ account: 'crash', role: 'write' })
  setup.close()
  const rounds: Round[] = []

  for (let r = 0; r < ROUNDS; r++) {
    const round: Round = { acknowledged: [], cut: 0, unexpected: [], stop: false }
    rounds.push(round)
    const server = await startServer({ DATABASE_PATH: path })
    const streaming = streamCreates(server.base, token, r, round)
    try {
      await progress(round, streaming)
      // Then a moment more, so the kill lands anywhere in a batch, not right after a count.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 300))
    } finally {
      await stopServer(server, 'SIGKILL')
      await streaming
    }
    t.same(round.unexpected, [], `round ${r}: every answer was a 200`)
    t.ok(round.acknowledged.length >= FLOOR, `round ${r}: ${round.acknowledged.length} writes acknowledged`)
    t.ok(round.cut > 0, `round ${r}: the kill cut ${round.cut} writes in flight`)
  }
  const acknowledged = rounds.flatMap((round) => round.acknowledged)

  // The file itself, read with plain SQL: nothing of the service in between.
  const check = new BetterSqlite3(path, { readonly: true })
  t.equal(check.pragma('integrity_check', { simple: true }), 'ok', 'integrity_check is ok')
  const stored = new Set(check.prepare('SELECT id FROM ward_occupants').pluck().all() as string[])
  check.close()
  const lost = acknowledged.filter((id) => !stored.has(id))
  t.same(lost, [], `all ${acknowledged.length} acknowledged records are in the file`)

  const server = await startServer({ DATABASE_PATH: path })
  t.teardown(() => stopServer(server))
  const res = await fetch(`${server.base}/ward-occupants?$limit=0`, { headers: { authorization: `Bearer ${token}` } })
  t.equal(((await res.json()) as { total: number }).total, stored.size, 'the restarted service serves them all')
})
