// The database limit's part of the report: each of the four scenarios in turns (turns.js), its server CPU per request
// beside the service's, and the targets as a share of the limit (its CPU µs over the service's:
// 1.00 is the limit itself, 0.5 the service spending twice as much per request).
import { met, num, quartilesText, table } from '../markdown.js'

export const LIMIT_TARGETS = { get: 0.75, list: 1.0, create: 0.6, patch: 0.5 }

export function limitSection(report) {
  const rows = report.limit.turns.map((r) => {
    const target = LIMIT_TARGETS[r.key]
    return [
      r.title,
      r.limitMicros.toFixed(1),
      r.serviceMicros.toFixed(1),
      r.ratio.toFixed(2),
      target ? `≥ ${target} ${met(r.ratio >= target)}` : '',
      quartilesText(r),
      `${num(r.requests.limit)} / ${num(r.requests.service)}`,
      `${r.non2xx.limit} / ${r.non2xx.service}`,
      String(r.rounds),
    ]
  })
  return [
    '#### The database limit (same run, same Node, same rows, in alternate turns)',
    '',
    'Bare Fastify and better-sqlite3 doing the same CRUD on a copy of the seeded file, durable, nothing else (`bench/limit/`), against a service of its own on another copy' +
      (report.peer
        ? ' and the Feathers peer (below) on a third; all three running, loaded in alternate half-second turns, the service’s between the limit’s and the peer’s,'
        : '; both running, loaded in alternate half-second turns,') +
      ' 20 rounds (fewer for the discharge only if a side came near the end of the seeded pool; `bench/limit/turns.js`). **of the limit**: the limit’s server CPU µs per request over the service’s, the median of the pairs of adjacent turns.',
    '',
    table(
      [
        'scenario',
        'limit CPU µs/req (all turns)',
        'service CPU µs/req (all turns)',
        'of the limit (median of the pairs)',
        'target',
        'quartiles of the pairs',
        'requests limit / service',
        'non-2xx limit / service',
        'rounds',
      ],
      rows,
    ),
  ].join('\n')
}
