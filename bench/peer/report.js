// The Feathers peer's part of the benchmark's report: its rows of the targets table (issue 31) and
// its table beside the database limit's, both from the alternate turns (bench/limit/turns.js).
import { mb, met, num, quartilesText, table } from '../markdown.js'

/** × peer the service should reach: durable writes 4×, reads 2× (issue 31). */
export const PEER_TARGETS = { get: 2, list: 2, create: 4, patch: 4 }

const peerRows = (report) => report.limit?.turns.filter((row) => row.peer) ?? []

/** The targets of issue 31 against the peer, marked met or not from this run's turns. */
export function peerTargetRows(report) {
  return peerRows(report).map((row) => {
    const target = PEER_TARGETS[row.key]
    return [
      `${row.title} vs the Feathers peer (CPU per request, in turns)`,
      `≥ ${target}×`,
      `${row.peer.ratio.toFixed(2)}×`,
      met(row.peer.ratio >= target),
    ]
  })
}

/** The peer against the service in the same turns as the limit's. */
export function peerTurnsSection(report) {
  const rows = peerRows(report).map((r) => {
    const target = PEER_TARGETS[r.key]
    return [
      r.title,
      r.peer.micros.toFixed(1),
      r.serviceMicros.toFixed(1),
      `${r.peer.ratio.toFixed(2)}×`,
      target ? `≥ ${target}× ${met(r.peer.ratio >= target)}` : '',
      quartilesText(r.peer),
      `${r.peer.throughput.ratio.toFixed(2)}×`,
      `${num(r.peer.requests)} / ${num(r.requests.service)}`,
      `${r.peer.non2xx} / ${r.non2xx.service}`,
      String(r.rounds),
    ]
  })
  const { seeded, peakRss } = report.peer
  return [
    '#### The Feathers peer (same run, same Node, same rows and tokens, in the same turns)',
    '',
    'FeathersJS v5, `@feathersjs/koa` REST, a `@feathersjs/knex` service on SQLite (WAL, `synchronous=FULL`; `bench/peer/`), ' +
      `on its own copy of the ${num(seeded.count)} occupants and the tokens of the service's seeded file; ` +
      'it takes a turn in each round above, next to the service’s. ' +
      '**× peer**: the peer’s server CPU µs per request over the service’s, the median of the pairs of adjacent turns; ' +
      '**req/s × peer**: the service’s requests in its turn over the peer’s in the adjacent one, the same median (no target; ' +
      'the peer waits for each commit’s sync on its event loop, time that is not CPU). ' +
      `Peer peak RSS over its turns ${mb(peakRss)} MB.`,
    '',
    table(
      [
        'scenario',
        'peer CPU µs/req (all turns)',
        'service CPU µs/req (all turns)',
        '× peer (median of the pairs)',
        'target',
        'quartiles of the pairs',
        'req/s × peer (median of the pairs)',
        'requests peer / service',
        'non-2xx peer / service',
        'rounds',
      ],
      rows,
    ),
  ].join('\n')
}
