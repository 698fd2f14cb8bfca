// The fan-out section of the benchmark's report (docs/PERFORMANCE.md).
import { met, num, table } from '../markdown.js'

const ms = (n) => (n === null || n === undefined ? '–' : n.toFixed(1))
const RSS_TARGET_MB = 300
const TARGET_RATE = 40

/** The highest rate at which p99 stayed under 100 ms and every event was delivered. */
function knee(rows, label) {
  const good = rows.filter((r) => r.label === label && r.p99 !== null && r.p99 < 100 && r.deliveries >= r.expected)
  return good.length ? `${Math.max(...good.map((r) => r.rate))}/s` : 'none measured'
}

export function fanoutSection(fanout) {
  const at = (label, rate) => fanout.rows.find((r) => r.label === label && r.rate === rate)
  const rates = [...new Set(fanout.rows.map((r) => r.rate))]
  const cell = (r) =>
    r
      ? `${ms(r.p50)} / ${ms(r.p99)}${r.deliveries < r.expected ? ` (${num(r.deliveries)} of ${num(r.expected)})` : ''}`
      : '–'
  const body = rates.map((rate) => {
    const service = at('service', rate)
    return [
      `${rate}/s (${num(rate * fanout.streams)} deliveries/s)`,
      cell(at('limit', rate)),
      cell(service),
      cell(at('peer', rate)),
      service ? `${service.cpuMicrosPerDelivery.toFixed(1)}` : '–',
    ]
  })
  const service = at('service', TARGET_RATE)
  const limit = at('limit', TARGET_RATE)
  const peer = at('peer', TARGET_RATE)
  const rssMb = fanout.peakRss / 2 ** 20
  const keep = fanout.creates.withStreams / fanout.creates.without
  const targets = [
    [
      `every event delivered at ${TARGET_RATE}/s`,
      service ? `${num(service.deliveries)} of ${num(service.expected)}` : 'not run',
      met(service && service.deliveries >= service.expected),
    ],
    [
      'p99 within 1.5× the limit’s',
      service && limit ? `${(service.p99 / limit.p99).toFixed(2)}×` : 'not run',
      met(service && limit && service.p99 <= 1.5 * limit.p99),
    ],
    [
      'p99 below the peer’s',
      service && peer ? `${ms(service.p99)} vs ${ms(peer.p99)} ms` : 'not run',
      met(service && peer && service.p99 < peer.p99),
    ],
    [
      `RSS with ${num(fanout.streams)} streams ≤ ${RSS_TARGET_MB} MB`,
      `${rssMb.toFixed(0)} MB`,
      met(rssMb <= RSS_TARGET_MB),
    ],
    [
      `creates with ${num(fanout.streams)} streams of another facility open, within 10 %`,
      `${num(fanout.creates.withStreams)} vs ${num(fanout.creates.without)} req/s (${(keep * 100).toFixed(0)} %)`,
      met(keep >= 0.9),
    ],
  ]
  return [
    `#### Live feed fan-out: ${num(fanout.streams)} open streams, every stream receives every change`,
    '',
    `One harness process holds the connections and sends the writes at a steady rate for ${fanout.seconds} s per rate; ` +
      'latency is from the write’s request to each delivery, on the harness’s clock. ' +
      '**limit**: bare Fastify writing one pre-serialized frame per change to every stream (no auth, no database); ' +
      '**service**: `GET /events?resources=ward-occupants` with tokens without a facility, writes through `POST /ward-occupants`; ' +
      '**peer**: FeathersJS v5 + Socket.io, one channel, an in-memory service, writes over the socket. ' +
      'The harness shares the 2 cores with the server.',
    '',
    table(
      ['changes/s', 'limit p50 / p99 ms', 'service p50 / p99 ms', 'peer p50 / p99 ms', 'service CPU µs per delivery'],
      body,
    ),
    '',
    `Knee (highest rate with p99 under 100 ms): limit ${knee(fanout.rows, 'limit')}, service ${knee(fanout.rows, 'service')}, peer ${knee(fanout.rows, 'peer')}.`,
    '',
    table(['target', 'this run', ''], targets),
    '',
    `Creates without streams measured before and after (${fanout.creates.withoutRuns.map(num).join(' and ')} req/s); the ratio uses the mean.`,
  ].join('\n')
}
