// The ADT feed in the bench (issue 38): admissions over MLLP as senders send them, each ACK awaited
// before the next. `npm run bench -- --only adt`, or alone: `npm run build && node bench/adt.js [seconds]`.
// Targets (docs/ADT.md, "Throughput"): >= 1000 admissions a second over one connection, p99 <= 50 ms at 100 a second.
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { runFloor } from './adt-floor.js'
import { acceptedControlId, admissionText, connectSender } from './mllp-sender.js'
import { freePort, startService } from './processes.js'

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0

/**
 * One connection, each ACK awaited; `pace`: messages a second (0: as fast as the ACKs come). Paced,
 * a message's latency counts from when it was due, not from when the previous ACK let it go: a
 * slow ACK then shows in the messages it held back too, as a sender on a schedule feels it.
 */
async function sender(port, tag, seconds, pace, latencies) {
  const client = await connectSender(port)
  let n = 0
  const start = performance.now()
  const end = start + seconds * 1000
  try {
    while (performance.now() < end) {
      let sent = performance.now()
      if (pace > 0) {
        const due = start + (n * 1000) / pace
        const wait = due - sent
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
        sent = due
      }
      const ack = await client.send(admissionText(n, tag))
      latencies.push(performance.now() - sent)
      if (acceptedControlId(ack) !== `${tag}-${n}`) throw new Error(`${tag}-${n}: ${ack}`)
      n++
    }
  } finally {
    client.close()
  }
  return n
}

async function scenario(port, service, title, { tag, connections, seconds, pace }) {
  const latencies = []
  // The machine may be shared: what else ran shows in the load average.
  const load = loadavg()[0]
  const cpuBefore = service.cpuSeconds()
  const started = performance.now()
  const counts = await Promise.all(
    Array.from({ length: connections }, (_, c) => sender(port, `${tag}${c}`, seconds, pace, latencies)),
  )
  const elapsed = (performance.now() - started) / 1000
  const cpuSeconds = service.cpuSeconds() - cpuBefore
  latencies.sort((a, b) => a - b)
  const total = counts.reduce((a, b) => a + b, 0)
  return {
    title,
    connections,
    pace,
    load,
    perSecond: total / elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    total,
    // The server's CPU (all its threads, clock ticks of 10 ms) per message.
    cpuMicros: total > 0 ? (cpuSeconds * 1e6) / total : Number.NaN,
  }
}

/** The targets of issue 38, beside what this run measured. */
export const ADT_TARGETS = [
  {
    what: 'admissions a second, 1 connection, each ACK awaited',
    target: '≥ 1,000/s',
    of: (results) => results.find((r) => !r.floor && r.connections === 1 && r.pace === 0),
    // Beside it, the floor of this machine measured in the same run (bench/adt-floor.js).
    value: (r, results) => {
      const floor = results.find((f) => f.floor)
      return `${r.perSecond.toFixed(0)}/s${floor ? ` (floor here: ${floor.perSecond.toFixed(0)}/s)` : ''}`
    },
    met: (r) => r.perSecond >= 1000,
  },
  {
    what: 'admissions a second, 1 connection, of the floor measured in the same run',
    target: '≥ 0.8',
    of: (results) =>
      results.find((f) => f.floor) ? results.find((r) => !r.floor && r.connections === 1 && r.pace === 0) : undefined,
    value: (r, results) => (r.perSecond / results.find((f) => f.floor).perSecond).toFixed(2),
    met: (r, results) => r.perSecond / results.find((f) => f.floor).perSecond >= 0.8,
  },
  {
    what: 'p99 from send to ACK at 100 a second',
    target: '≤ 50 ms',
    of: (results) => results.find((r) => r.pace === 100),
    value: (r) => `${r.p99.toFixed(1)} ms`,
    met: (r) => r.p99 <= 50,
  },
]

/** One line a target: what, target, this run, met. */
export function adtTargetLines(results) {
  return ADT_TARGETS.map((t) => {
    const r = t.of(results)
    return r
      ? [t.what, t.target, t.value(r, results), t.met(r, results) ? 'met' : '**not met**']
      : [t.what, t.target, 'not run', '']
  })
}

function table(header, body) {
  const line = (cells) => `| ${cells.join(' | ')} |`
  return [line(header), line(header.map(() => '---')), ...body.map(line)].join('\n')
}

/** The ADT section of the report: each scenario, then the targets beside what this run measured. */
export function adtSection(results) {
  return [
    '#### ADT feed over MLLP (docs/ADT.md)',
    '',
    table(
      ['scenario', 'admissions/s', 'p50 ms', 'p99 ms', 'server CPU µs/message', 'messages', 'load average at start'],
      results.map((r) => [
        r.title,
        r.perSecond.toFixed(0),
        r.p50.toFixed(1),
        r.p99.toFixed(1),
        Number.isFinite(r.cpuMicros) ? r.cpuMicros.toFixed(0) : '',
        String(r.total),
        r.load.toFixed(2),
      ]),
    ),
    '',
    table(['target', 'goal', 'this run', ''], adtTargetLines(results)),
  ].join('\n')
}

/** Runs the three ADT scenarios on a service of its own; returns their results for the report. */
export async function runAdt({
  workdir,
  log,
  seconds = 10,
  warmup = 3,
  logLevel = 'warn',
  btrees = 31,
  nodeArgs = [],
}) {
  const hl7Port = await freePort()
  const service = await startService({
    database: join(workdir, 'adt.db'),
    logLevel,
    nodeArgs,
    env: { HL7_PORT: String(hl7Port) },
  })
  const results = []
  try {
    // As the HTTP scenarios are: the first messages after a start run code not yet optimized.
    if (warmup > 0) {
      log(`warm-up: ${warmup} s over one connection`)
      await sender(hl7Port, 'warm', warmup, 0, [])
    }
    for (const [title, setup] of [
      ['ADT A01, 1 connection, each ACK awaited', { tag: 'one', connections: 1, seconds, pace: 0 }],
      ['ADT A01, 4 connections, each ACK awaited', { tag: 'four', connections: 4, seconds, pace: 0 }],
      ['ADT A01, 1 connection at 100/s', { tag: 'paced', connections: 1, seconds, pace: 100 }],
    ]) {
      log(`scenario: ${title}`)
      const r = await scenario(hl7Port, service, title, setup)
      log(
        `  ${r.perSecond.toFixed(0)}/s, p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, server CPU ${r.cpuMicros.toFixed(0)} µs/message (${r.total} messages; load average ${r.load.toFixed(2)})`,
      )
      results.push(r)
    }
  } finally {
    await service.stop()
  }
  log(`floor: ${btrees} b-trees a message, the WAL synced, no HL7 (bench/adt-floor.js)`)
  const load = loadavg()[0]
  // The floor writes as many b-trees as an admission does (bench/btrees.js): one table, the rest indexes.
  const floor = await runFloor({ seconds: Math.min(seconds, 5), indexes: btrees - 1 })
  results.push({
    ...floor,
    title: `floor: ${btrees} b-trees synced a message, no HL7`,
    floor: true,
    connections: 1,
    pace: 0,
    load,
    cpuMicros: Number.NaN,
  })
  for (const [what, target, value, met] of adtTargetLines(results)) log(`target: ${what} ${target}: ${value} ${met}`)
  return results
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { mkdtempSync, rmSync } = await import('node:fs')
  const { tmpdir } = await import('node:os')
  const workdir = mkdtempSync(join(tmpdir(), 'facility-bench-adt-'))
  try {
    const seconds = Number(process.argv[2] ?? 10)
    const warmup = Number(process.argv[3] ?? Math.min(3, seconds))
    await runAdt({ workdir, log: (line) => process.stderr.write(`${line}\n`), seconds, warmup })
  } finally {
    rmSync(workdir, { recursive: true, force: true })
  }
}
