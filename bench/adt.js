// The ADT feed in the bench (issue 38): admissions over MLLP as senders send them, each ACK awaited
// before the next. `npm run bench -- --only adt`, or alone: `npm run build && node bench/adt.js [seconds]`.
// Targets (docs/ADT.md, "Throughput"): >= 1000 admissions a second over one connection, >= 0.8 of the
// floor (bench/adt-floor.js, loaded in alternate turns with the service), p99 <= 50 ms at 100 a second.
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { startFloor } from './adt-floor.js'
import { met, num, quartilesText, table } from './markdown.js'
import { acceptedControlId, admissionFeed, admissionText, connectSender } from './mllp-sender.js'
import { freePort, startService } from './processes.js'
import { medianOfPairs, medianOfRatePairs, microsPerRequest, playTurns } from './turns.js'

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

const SIDES = ['service', 'floor']

/**
 * The service's listener and the floor, both running, each sent admissions over one connection of
 * its own, each ACK awaited, in alternate turns, the order reversed every round (bench/turns.js).
 * Measured one after the other, minutes apart, the same server's CPU per message moved by up to 2x
 * on this shared machine; adjacent turns meet the same machine state. The measure is the median,
 * across the pairs of adjacent turns, of the service's admissions over the floor's (and, beside it,
 * of floor over service CPU µs a message); each side's messages/s, p50 and p99 are over its own turns.
 */
async function playAgainstFloor({ servers, ports, warmup, rounds, turnSeconds, log }) {
  const feeds = {}
  try {
    for (const side of SIDES) feeds[side] = await admissionFeed(ports[side], side)
    // As the HTTP scenarios are: the first messages after a start run code not yet optimized.
    if (warmup > 0) {
      log(`warm-up: ${warmup} s over one connection, service then floor`)
      for (const side of SIDES) await feeds[side].warm(warmup)
    }
    log(`1 connection, each ACK awaited: ${rounds} rounds of a ${turnSeconds} s turn, service and floor`)
    // The machine may be shared: what else ran shows in the load average.
    const load = loadavg()[0]
    const { totals, played } = await playTurns({
      sides: SIDES,
      servers,
      runTurns: Object.fromEntries(SIDES.map((side) => [side, feeds[side].turn])),
      rounds,
      turnSeconds,
      refuse(side, result) {
        if (result.non2xx > 0)
          throw new Error(`${side}: ${result.non2xx} admissions not accepted; the first answer: ${feeds[side].refused}`)
      },
    })
    const measured = (side) => {
      const latencies = feeds[side].latencies.sort((a, b) => a - b)
      return {
        perSecond: totals[side].requests / feeds[side].seconds,
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
        total: totals[side].requests,
        // Its threads' schedstat over its own turns (ns), not the 10 ms ticks of the other scenarios.
        cpuMicros: microsPerRequest(totals[side]),
        load,
      }
    }
    return {
      rounds: played,
      turnSeconds,
      service: measured('service'),
      floor: measured('floor'),
      // The target's measure (issue 48: admissions over one connection, each ACK awaited): the
      // service's admissions in a turn over the floor's in the adjacent one, turns being equally long.
      throughput: medianOfRatePairs(totals.service, totals.floor),
      // Where the difference is spent: the floor's server CPU a message over the service's.
      cpu: medianOfPairs(totals.floor, totals.service),
    }
  } finally {
    for (const feed of Object.values(feeds)) feed.close()
  }
}

/** The targets of issue 38 (docs/ADT.md, "Throughput"), beside what this run measured. */
export function adtTargetLines({ turns, scenarios }) {
  const { service, floor } = turns
  const paced = scenarios.find((r) => r.pace === 100)
  return [
    [
      'admissions a second, 1 connection, each ACK awaited (in its turns)',
      '≥ 1,000/s',
      `${service.perSecond.toFixed(0)}/s (the floor in its turns: ${floor.perSecond.toFixed(0)}/s)`,
      met(service.perSecond >= 1000),
    ],
    [
      'of the floor: the service’s admissions in a turn over the floor’s in the adjacent one, median of the pairs',
      '≥ 0.8',
      `${turns.throughput.ratio.toFixed(2)} (quartiles ${quartilesText(turns.throughput)})`,
      met(turns.throughput.ratio >= 0.8),
    ],
    paced
      ? ['p99 from send to ACK at 100 a second', '≤ 50 ms', `${paced.p99.toFixed(1)} ms`, met(paced.p99 <= 50)]
      : ['p99 from send to ACK at 100 a second', '≤ 50 ms', 'not run', ''],
  ]
}

/** The ADT section of the report: each scenario, the turns against the floor, then the targets. */
export function adtSection(adt) {
  const { turns } = adt
  const rows = [
    { title: 'ADT A01, 1 connection, each ACK awaited (its turns beside the floor)', ...turns.service },
    { title: `floor: ${adt.btrees} b-trees synced a message, no HL7 (its turns)`, ...turns.floor },
    ...adt.scenarios,
  ]
  return [
    '#### ADT feed over MLLP (docs/ADT.md)',
    '',
    table(
      ['scenario', 'admissions/s', 'p50 ms', 'p99 ms', 'server CPU µs/message', 'messages', 'load average at start'],
      rows.map((r) => [
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
    `The service’s listener and the floor (\`bench/adt-floor.js\`: one transaction writing the ${adt.btrees} b-trees an admission writes, the WAL synced, an ACK-shaped answer, no HL7 parsing), both running, each sent new admissions over one MLLP connection, each ACK awaited, in alternate ${turns.turnSeconds} s turns, the order reversed every round (\`bench/turns.js\`); their CPU per message is each process’s threads’ CPU time in its own turns. **of the floor**, the target’s measure: the service’s admissions in a turn over the floor’s in the adjacent one, the median of the pairs (1.00 is the floor itself). **CPU of the floor**: the floor’s server CPU µs a message over the service’s, the same way: where the difference is spent (the sync’s wait is in the first, not in the second).`,
    '',
    table(
      [
        'floor CPU µs/message (all turns)',
        'service CPU µs/message (all turns)',
        'of the floor (admissions, median of the pairs): the target measure',
        'target',
        'quartiles of the pairs',
        'CPU of the floor (median of the pairs)',
        'quartiles',
        'messages floor / service',
        'rounds',
      ],
      [
        [
          turns.floor.cpuMicros.toFixed(0),
          turns.service.cpuMicros.toFixed(0),
          turns.throughput.ratio.toFixed(2),
          `≥ 0.8 ${met(turns.throughput.ratio >= 0.8)}`,
          quartilesText(turns.throughput),
          turns.cpu.ratio.toFixed(2),
          quartilesText(turns.cpu),
          `${num(turns.floor.total)} / ${num(turns.service.total)}`,
          String(turns.rounds),
        ],
      ],
    ),
    '',
    table(['target', 'goal', 'this run', ''], adtTargetLines(adt)),
  ].join('\n')
}

/**
 * Runs the ADT scenarios on a service of its own: one connection in turns with the floor, then four
 * connections and one paced at 100 a second, the floor stopped; returns their results for the report.
 * `btrees`: how many b-trees an admission writes (bench/btrees.js), which the floor writes too.
 */
export async function runAdt({
  workdir,
  log,
  seconds = 10,
  warmup = 3,
  logLevel = 'warn',
  btrees,
  nodeArgs = [],
  rounds = 20,
  turnSeconds = 0.5,
}) {
  const hl7Port = await freePort()
  const service = await startService({
    database: join(workdir, 'adt.db'),
    logLevel,
    nodeArgs,
    env: { HL7_PORT: String(hl7Port) },
  })
  let floor = null
  const scenarios = []
  let turns
  try {
    log(`floor: ${btrees} b-trees a message, the WAL synced, no HL7 (bench/adt-floor.js)`)
    // The floor writes as many b-trees as an admission does (bench/btrees.js): one table, the rest indexes.
    floor = await startFloor({ indexes: btrees - 1 })
    turns = await playAgainstFloor({
      servers: { service, floor },
      ports: { service: hl7Port, floor: floor.port },
      warmup,
      rounds,
      turnSeconds,
      log,
    })
    await floor.stop()
    floor = null
    for (const side of SIDES) {
      const r = turns[side]
      log(
        `  ${side}: ${r.perSecond.toFixed(0)}/s, p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, server CPU ${r.cpuMicros.toFixed(0)} µs/message (${r.total} messages)`,
      )
    }
    for (const [title, setup] of [
      ['ADT A01, 4 connections, each ACK awaited', { tag: 'four', connections: 4, seconds, pace: 0 }],
      ['ADT A01, 1 connection at 100/s', { tag: 'paced', connections: 1, seconds, pace: 100 }],
    ]) {
      log(`scenario: ${title}`)
      const r = await scenario(hl7Port, service, title, setup)
      log(
        `  ${r.perSecond.toFixed(0)}/s, p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, server CPU ${r.cpuMicros.toFixed(0)} µs/message (${r.total} messages; load average ${r.load.toFixed(2)})`,
      )
      scenarios.push(r)
    }
  } finally {
    await floor?.stop()
    await service.stop()
  }
  const adt = { btrees, turns, scenarios }
  for (const [what, target, value, ok] of adtTargetLines(adt)) log(`target: ${what} ${target}: ${value} ${ok}`)
  return adt
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { mkdtempSync, rmSync } = await import('node:fs')
  const { tmpdir } = await import('node:os')
  const workdir = mkdtempSync(join(tmpdir(), 'facility-bench-adt-'))
  try {
    const seconds = Number(process.argv[2] ?? 10)
    const warmup = Number(process.argv[3] ?? Math.min(3, seconds))
    // The floor writes as many b-trees as an admission does on this build, counted, not assumed.
    const { countBtrees } = await import('./btrees.js')
    const btrees = (await countBtrees()).admission.length
    await runAdt({ workdir, log: (line) => process.stderr.write(`${line}\n`), seconds, warmup, btrees })
  } finally {
    rmSync(workdir, { recursive: true, force: true })
  }
}
