// The floor under the ADT bench's first target (issue 38): how many durable round trips a second this
// machine allows over one connection, each answer awaited, for a server that does nothing but what
// every ADT message must: one transaction that writes a page of as many b-trees as an admission
// writes (31, docs/ADT.md "Throughput": one table with 30 indexes here), the WAL synced before the
// answer, over loopback TCP to a client in another process. No HL7 parsing, no business logic, no
// JSON: what it reaches, no server doing the service's durable work can pass on this machine.
// Alone: `node bench/adt-floor.js [seconds] [indexes]`.
import { fork } from 'node:child_process'
import { closeSync, fdatasync, mkdtempSync, openSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { createConnection, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const MESSAGE_BYTES = 256
const ANSWER = Buffer.from('AA')

/** The server's half: a fixed-size message in, a transaction, fdatasync of the WAL, the answer out. */
function serve(indexes) {
  const Database = createRequire(import.meta.url)('better-sqlite3')
  const dir = mkdtempSync(join(tmpdir(), 'facility-adt-floor-'))
  const db = new Database(join(dir, 'floor.db'))
  db.pragma('journal_mode = WAL')
  // As the service: SQLite does not sync; the WAL is synced before the answer (db/wal-sync.ts).
  db.pragma('synchronous = OFF')
  db.exec('CREATE TABLE m (id INTEGER PRIMARY KEY, a TEXT, b TEXT, c TEXT, d INTEGER)')
  for (let i = 0; i < indexes; i++) db.exec(`CREATE INDEX m_${i} ON m (${'abcd'[i % 4]}, id)`)
  const insert = db.prepare('INSERT INTO m (a, b, c, d) VALUES (?, ?, ?, ?)')
  const write = db.transaction((n) => insert.run(`a${Math.random()}`, `b${n}`, `c${Math.random()}`, n))
  const wal = openSync(join(dir, 'floor.db-wal'), 'r+')
  let received = 0
  const server = createServer((socket) => {
    socket.setNoDelay(true)
    socket.on('data', (chunk) => {
      received += chunk.length
      while (received >= MESSAGE_BYTES) {
        received -= MESSAGE_BYTES
        write(received)
        fdatasync(wal, (error) => socket.write(error ? 'AE' : ANSWER))
      }
    })
  })
  server.listen(0, '127.0.0.1', () => process.send?.(server.address().port))
  process.on('disconnect', () => {
    server.close()
    closeSync(wal)
    db.close()
    rmSync(dir, { recursive: true, force: true })
    process.exit(0)
  })
}

/** One connection, each answer awaited, for `seconds`; returns round trips a second and p50/p99 ms. */
export async function runFloor({ seconds = 5, indexes = 30 } = {}) {
  const child = fork(fileURLToPath(import.meta.url), ['--serve', String(indexes)], { stdio: 'ignore' })
  try {
    const port = await new Promise((resolve, reject) => {
      child.once('message', resolve)
      child.once('exit', (code) => reject(new Error(`the floor server exited with ${code}`)))
    })
    const socket = createConnection({ port, host: '127.0.0.1', noDelay: true })
    await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject))
    const message = Buffer.alloc(MESSAGE_BYTES, 'x')
    const latencies = []
    const started = performance.now()
    while (performance.now() - started < seconds * 1000) {
      const sent = performance.now()
      await new Promise((resolve) => {
        socket.once('data', resolve)
        socket.write(message)
      })
      latencies.push(performance.now() - sent)
    }
    const elapsed = (performance.now() - started) / 1000
    socket.destroy()
    latencies.sort((a, b) => a - b)
    const at = (p) => latencies[Math.min(latencies.length - 1, Math.floor((latencies.length * p) / 100))] ?? 0
    return { indexes, perSecond: latencies.length / elapsed, p50: at(50), p99: at(99), total: latencies.length }
  } finally {
    child.disconnect?.()
  }
}

if (process.argv[2] === '--serve') serve(Number(process.argv[3]))
else if (import.meta.url === `file://${process.argv[1]}`) {
  const seconds = Number(process.argv[2] ?? 5)
  for (const indexes of process.argv[3] === undefined ? [0, 30] : [Number(process.argv[3])]) {
    const r = await runFloor({ seconds, indexes })
    console.log(
      `floor, ${indexes + 1} b-trees a message: ${r.perSecond.toFixed(0)}/s, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms (${r.total} round trips)`,
    )
  }
}
