import { once } from 'node:events'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { openDatabase } from '../../db/connection.js'
import { createTokenRepository } from '../../db/repositories/tokens.js'
import { type ServerProcess, startServer, stopServer } from './server-process.js'

const KILL_AFTER_ANSWER_SERVER = 'test/reliability/kill-after-answer-server.ts'

// `npm run crash-test` runs more rounds; the regular suite runs a few.
const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 3)
const READERS = 12
const TOKENS = 3
const RECORDS = 20
/** The fewest answers of a round before its kill. */
const FLOOR = 60
const ROUTE = 'GET /ward-occupants/:id'

interface Reader {
  token: string
  tokenId: string
}

interface Round {
  /** `tokenId record` of every answer received whole: a 200 with the record as its body. */
  received: string[]
  cut: number
  unexpected: string[]
  stop: boolean
}

function readUntilGone(base: string, readers: Reader[], records: string[], round: Round): Promise<void> {
  async function reader(r: number): Promise<void> {
    const { token, tokenId } = readers[r % readers.length] as Reader
    while (!round.stop) {
      const id = records[Math.floor(Math.random() * records.length)] as string
      let body: string
      let status: number
      try {
        const res = await fetch(`${base}/ward-occupants/${id}`, { headers: { authorization: `Bearer ${token}` } })
        status = res.status
        body = await res.text()
      } catch {
        round.cut++
        return // the server is gone (perhaps between an answer's head and its body: not received)
      }
      if (status !== 200) {
        round.unexpected.push(`${status} ${body}`)
        return
      }
      if ((JSON.parse(body) as { id: string }).id !== id) round.unexpected.push(`asked ${id}, got ${body}`)
      round.received.push(`${tokenId} ${id}`)
    }
  }
  return Promise.all(Array.from({ length: READERS }, (_, r) => reader(r))).then(() => {})
}

/** Resolves once the server exited (it kills itself); fails when it lives on for 60 s. */
async function killed(server: ServerProcess, round: Round): Promise<void> {
  const exited = once(server.child, 'exit')
  const timer = setTimeout(() => {
    round.stop = true
    server.child.kill('SIGKILL')
  }, 60_000)
  const [, signal] = await exited
  clearTimeout(timer)
  if (round.stop) throw new Error(`the server was not killed by itself: ${round.received.length} reads answered`)
  if (signal !== 'SIGKILL') throw new Error(`the server exited with ${signal}: ${server.output()}`)
}

/**
 * With AUDIT_READS=true, concurrent reads by several tokens; the server is SIGKILLed right after a
 * random answer left (after FLOOR to 3 FLOOR of them), the moment an entry written after its answer
 * would be lost. Every answer the client received must have its read-log entry in the file, read
 * with plain SQL.
 */
t.test(`every read answered before SIGKILL is in the read log (${ROUNDS} rounds)`, async (t) => {
  const path = join(t.testdir(), 'read-audit-crash.db')
  const setup = openDatabase(path)
  const tokens = createTokenRepository(setup)
  const writer = tokens.create({ account: 'nurse', role: 'write' }).token
  const readers = Array.from({ length: TOKENS }, (_, i) => {
    const { token, info } = tokens.create({ account: `viewer-${i}`, role: 'read' })
    return { token, tokenId: info.tokenId }
  })
  setup.close()

  const env = { DATABASE_PATH: path, AUDIT_READS: 'true' }
  const seeding = await startServer(env)
  const records: string[] = []
  for (let i = 0; i < RECORDS; i++) {
    const res = await fetch(`${seeding.base}/ward-occupants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${writer}`, 'content-type': 'application/json' },
      body: JSON.stringify({ encounter: `enc-${i}`, bed: `B-${i}`, occupiedBy: `patient-${i}` }),
    })
    records.push(((await res.json()) as { id: string }).id)
  }
  await stopServer(seeding)

  const rounds: Round[] = []
  for (let r = 0; r < ROUNDS; r++) {
    const round: Round = { received: [], cut: 0, unexpected: [], stop: false }
    rounds.push(round)
    const killAfter = FLOOR + Math.floor(Math.random() * 2 * FLOOR)
    const server = await startServer({ ...env, KILL_AFTER_ANSWERS: String(killAfter) }, KILL_AFTER_ANSWER_SERVER)
    const reading = readUntilGone(server.base, readers, records, round)
    try {
      await killed(server, round)
    } finally {
      await reading
    }
    t.ok(round.received.length >= killAfter, `round ${r}: ${round.received.length} reads answered`)
    t.same(round.unexpected, [], `round ${r}: every answer was the record asked for`)
    t.ok(round.cut > 0, `round ${r}: the kill cut ${round.cut} reads in flight`)
  }

  // The file itself, read with plain SQL: nothing of the service in between.
  const check = new BetterSqlite3(path, { readonly: true })
  t.equal(check.pragma('integrity_check', { simple: true }), 'ok', 'integrity_check is ok')
  const logged = new Map<string, number>()
  const rows = check
    .prepare<[string], { token_id: string; record_id: string }>(
      'SELECT token_id, record_id FROM read_log WHERE route = ? AND status = 200',
    )
    .all(ROUTE)
  check.close()
  for (const row of rows) {
    const key = `${row.token_id} ${row.record_id}`
    logged.set(key, (logged.get(key) ?? 0) + 1)
  }
  const received = rounds.flatMap((round) => round.received)
  const unaudited: string[] = []
  for (const key of received) {
    const left = logged.get(key) ?? 0
    if (left === 0) unaudited.push(key)
    else logged.set(key, left - 1)
  }
  t.same(unaudited.length, 0, `all ${received.length} answers received have their entry (${unaudited.length} not)`)
})
