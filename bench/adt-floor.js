// The floor under the ADT bench's first target (issue 38): how many durable round trips a second this
// machine allows over one connection, each answer awaited, for a server that does nothing but what
// every ADT message must: one transaction that writes a page of as many b-trees as an admission
// writes (31, docs/ADT.md "Throughput": one table with 30 indexes here), the WAL synced before the
// answer, over loopback TCP to a client in another process. It reads the same MLLP frames from the
// same sender as the service's bench (bench/mllp-sender.js) and answers an ACK of the same shape,
// but parses nothing beyond MSH-10 and runs no business logic: what it reaches, no server doing the
// service's durable work can pass on this machine.
// The bench runs it beside the service and loads both in alternate turns (bench/adt.js); alone, one
// after the other for 1, 11, 21 and 31 b-trees: `node bench/adt-floor.js [seconds] [indexes] [--no-sync]`.
import { fork } from 'node:child_process'
import { closeSync, fdatasync, mkdtempSync, openSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { acceptedControlId, admissionText, connectSender } from './mllp-sender.js'
import { cpuNanosOf } from './processes.js'

const CHECKPOINTER = `
const { workerData } = require('node:worker_threads')
const db = new (require(workerData.Database))(workerData.path)
setInterval(() => db.pragma('wal_checkpoint(PASSIVE)'), 200)
`
const FRAME_END = '\x1c\r'

/** The ACK a real receiver sends, for the control id (MSH-10) it found. */
const answerTo = (controlId) =>
  `\x0bMSH|^~\\&|WARD|FS|BENCH|GENERAL|20260105103000||ACK^A01^ACK|${controlId}|P|2.5.1\rMSA|AA|${controlId}\x1c\r`

/** The server's half: an MLLP frame in, a transaction, fdatasync of the WAL, the answer out. */
function serve(indexes, sync) {
  const require = createRequire(import.meta.url)
  const Database = require('better-sqlite3')
  const dir = mkdtempSync(join(tmpdir(), 'facility-adt-floor-'))
  const db = new Database(join(dir, 'floor.db'))
  db.pragma('journal_mode = WAL')
  // SQLite does not sync a commit (the service's NORMAL does not either, in WAL mode); the WAL is
  // synced before the answer, as the service does. Checkpoints run in a worker thread every
  // 200 ms, as the service's do (db/checkpointer.ts), so the writer reuses the WAL from its start:
  // a WAL that only grew would make every sync also a sync of the file's size.
  db.pragma('synchronous = OFF')
  db.pragma('wal_autocheckpoint = 0')
  const checkpointer = new Worker(CHECKPOINTER, {
    eval: true,
    workerData: { path: join(dir, 'floor.db'), Database: require.resolve('better-sqlite3') },
  })
  db.exec('CREATE TABLE m (id INTEGER PRIMARY KEY, a TEXT, b TEXT, c TEXT, d INTEGER)')
  for (let i = 0; i < indexes; i++) db.exec(`CREATE INDEX m_${i} ON m (${'abcd'[i % 4]}, id)`)
  const insert = db.prepare('INSERT INTO m (a, b, c, d) VALUES (?, ?, ?, ?)')
  const write = db.transaction((n) => insert.run(`a${Math.random()}`, `b${n}`, `c${Math.random()}`, n))
  const wal = openSync(join(dir, 'floor.db-wal'), 'r+')
  let count = 0
  const server = createServer((socket) => {
    socket.setNoDelay(true)
    let buffered = ''
    socket.on('data', (chunk) => {
      buffered += chunk.toString('latin1')
      for (let end = buffered.indexOf(FRAME_END); end >= 0; end = buffered.indexOf(FRAME_END)) {
        const controlId = buffered.slice(0, buffered.indexOf('\r')).split('|')[9] ?? ''
        buffered = buffered.slice(end + FRAME_END.length)
        write(count++)
        const answer = answerTo(controlId)
        if (sync) fdatasync(wal, (error) => socket.write(error ? 'AE' : answer, 'latin1'))
        else socket.write(answer, 'latin1')
      }
    })
  })
  server.listen(0, '127.0.0.1', () => process.send?.(server.address().port))
  process.on('disconnect', async () => {
    await checkpointer.terminate()
    server.close()
    closeSync(wal)
    db.close()
    rmSync(dir, { recursive: true, force: true })
    process.exit(0)
  })
}

/**
 * Starts the floor's server in a process of its own; `cpuNanos()` is its CPU time so far (all its
 * threads), `stop()` ends it and removes its file.
 */
export async function startFloor({ indexes = 30, sync = true } = {}) {
  const child = fork(fileURLToPath(import.meta.url), ['--serve', String(indexes), sync ? 'sync' : 'no-sync'], {
    stdio: 'ignore',
  })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  const port = await new Promise((resolve, reject) => {
    child.once('message', resolve)
    child.once('exit', (code) => reject(new Error(`the floor server exited with ${code}`)))
  })
  return {
    port,
    cpuNanos: () => cpuNanosOf(child.pid),
    async stop() {
      if (child.connected) child.disconnect()
      const done = await Promise.race([exited.then(() => true), sleep(10_000, false, { ref: false })])
      if (!done) child.kill('SIGKILL')
    },
  }
}

/** One connection, each answer awaited, for `seconds`; returns round trips a second and p50/p99 ms. */
export async function runFloor({ seconds = 5, indexes = 30, sync = true } = {}) {
  const floor = await startFloor({ indexes, sync })
  try {
    const sender = await connectSender(floor.port)
    const latencies = []
    const started = performance.now()
    for (let n = 0; performance.now() - started < seconds * 1000; n++) {
      const sent = performance.now()
      const answer = await sender.send(admissionText(n, 'floor'))
      if (acceptedControlId(answer) !== `floor-${n}`) throw new Error(`the floor server answered ${answer}`)
      latencies.push(performance.now() - sent)
    }
    const elapsed = (performance.now() - started) / 1000
    sender.close()
    latencies.sort((a, b) => a - b)
    const at = (p) => latencies[Math.min(latencies.length - 1, Math.floor((latencies.length * p) / 100))] ?? 0
    return { indexes, sync, perSecond: latencies.length / elapsed, p50: at(50), p99: at(99), total: latencies.length }
  } finally {
    await floor.stop()
  }
}

if (process.argv[2] === '--serve') serve(Number(process.argv[3]), process.argv[4] === 'sync')
else if (import.meta.url === `file://${process.argv[1]}`) {
  const [seconds = '5', indexes, noSync] = process.argv.slice(2)
  const sync = noSync !== '--no-sync'
  for (const n of indexes === undefined ? [0, 10, 20, 30] : [Number(indexes)]) {
    const r = await runFloor({ seconds: Number(seconds), indexes: n, sync })
    console.log(
      `floor, ${n + 1} b-trees a message, WAL ${sync ? 'synced' : 'not synced'}: ${r.perSecond.toFixed(0)}/s, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms (${r.total} round trips)`,
    )
  }
}
