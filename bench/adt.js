// The ADT feed in the bench (issue 38): admissions over MLLP as senders send them, each ACK awaited
// before the next. `npm run bench -- --only adt`, or alone: `npm run build && node bench/adt.js`.
// Targets (docs/ADT.md, "Throughput"): >= 1000 admissions a second over one connection, p99 <= 50 ms at 100 a second.
import { join } from 'node:path'
import { Hl7Message } from '@medplum/core'
import { Hl7Client } from '@medplum/hl7'
import { freePort, startService } from './processes.js'

function admission(n, tag) {
  const at = '20260105103000'
  return Hl7Message.parse(
    [
      `MSH|^~\\&|BENCH|GENERAL|WARD|FS|${at}||ADT^A01^ADT_A01|${tag}-${n}|P|2.5.1`,
      `EVN|A01|${at}`,
      `PID|1||P-${n}^^^GENERAL^MR||Doe^Jane`,
      `PV1|1|I|W1^R${n % 50}^${tag}-B${n}^bench||||DR1^Smith||||||||||||${tag}-E${n}`,
    ].join('\r'),
  )
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0

/** One connection, each ACK awaited; `pace`: messages a second (0: as fast as the ACKs come). */
async function sender(port, tag, seconds, pace, latencies) {
  const client = new Hl7Client({ host: '127.0.0.1', port })
  let n = 0
  const start = performance.now()
  const end = start + seconds * 1000
  try {
    while (performance.now() < end) {
      if (pace > 0) {
        const due = start + (n * 1000) / pace
        const wait = due - performance.now()
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
      }
      const sent = performance.now()
      const ack = await client.sendAndWait(admission(n, tag), { timeoutMs: 30_000 })
      latencies.push(performance.now() - sent)
      const code = ack.getSegment('MSA')?.getField(1)?.toString()
      if (code !== 'AA') throw new Error(`${tag}-${n}: ${code} ${ack.toString()}`)
      n++
    }
  } finally {
    await client.close()
  }
  return n
}

async function scenario(port, title, { tag, connections, seconds, pace }) {
  const latencies = []
  const started = performance.now()
  const counts = await Promise.all(
    Array.from({ length: connections }, (_, c) => sender(port, `${tag}${c}`, seconds, pace, latencies)),
  )
  const elapsed = (performance.now() - started) / 1000
  latencies.sort((a, b) => a - b)
  const total = counts.reduce((a, b) => a + b, 0)
  return {
    title,
    perSecond: total / elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    total,
  }
}

/** Runs the three ADT scenarios on a service of its own; returns their lines for the report. */
export async function runAdt({ workdir, log, seconds = 10, logLevel = 'warn' }) {
  const hl7Port = await freePort()
  const service = await startService({
    database: join(workdir, 'adt.db'),
    logLevel,
    env: { HL7_PORT: String(hl7Port) },
  })
  const results = []
  try {
    for (const [title, setup] of [
      ['ADT A01, 1 connection, each ACK awaited', { tag: 'one', connections: 1, seconds, pace: 0 }],
      ['ADT A01, 4 connections, each ACK awaited', { tag: 'four', connections: 4, seconds, pace: 0 }],
      ['ADT A01, 1 connection at 100/s', { tag: 'paced', connections: 1, seconds, pace: 100 }],
    ]) {
      log(`scenario: ${title}`)
      const r = await scenario(hl7Port, title, setup)
      log(`  ${r.perSecond.toFixed(0)}/s, p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms (${r.total} messages)`)
      results.push(r)
    }
  } finally {
    await service.stop()
  }
  return results
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { mkdtempSync, rmSync } = await import('node:fs')
  const { tmpdir } = await import('node:os')
  const workdir = mkdtempSync(join(tmpdir(), 'facility-bench-adt-'))
  try {
    await runAdt({ workdir, log: (line) => process.stderr.write(`${line}\n`), seconds: Number(process.argv[2] ?? 10) })
  } finally {
    rmSync(workdir, { recursive: true, force: true })
  }
}
