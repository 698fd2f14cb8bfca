// The Feathers peer's part of the benchmark's report: two columns of the main table, three rows
// of the targets table (issue 31) and a table of its own runs.
const num = (n) => n.toLocaleString('en-US', { maximumFractionDigits: 0 })
const mb = (bytes) => (bytes / 2 ** 20).toFixed(0)
const met = (ok) => (ok ? 'met' : '**not met**')
export const WRITES_TARGET = 4
export const FLOOR_TARGET = 2

function table(header, body) {
  const line = (cells) => `| ${cells.join(' | ')} |`
  return [line(header), line(header.map(() => '---')), ...body.map(line)].join('\n')
}

function peerResult(peer, key) {
  const result = peer?.results.find((r) => r.scenario.key === key)?.result
  return result && !result.skipped ? result : null
}

/** The service's req/s over the peer's, for a scenario both ran. */
function times(report, key) {
  const peer = peerResult(report.peer, key)
  const own = report.results.find((r) => r.scenario.key === key)?.result
  return peer && own && !own.skipped ? own.rps / peer.rps : null
}

export const PEER_HEADER = ['Feathers peer req/s', '× peer']

/** The two cells of a main-table row: the peer's req/s (with its non-2xx, if any) and × peer. */
export function peerCells(report, key) {
  const peer = peerResult(report.peer, key)
  if (!peer) return ['', '']
  const non2xx = peer.non2xx ? ` (${num(peer.non2xx)} non-2xx)` : ''
  return [`${num(peer.rps)}${non2xx}`, `${times(report, key).toFixed(2)}×`]
}

/** The targets of issue 31 against the peer, marked met or not from this run. */
export function peerTargetRows(report) {
  const row = (what, key, target) => {
    const value = times(report, key)
    return [
      what,
      `≥ ${target}×`,
      value === null ? 'not run' : `${value.toFixed(2)}×`,
      value === null ? '' : met(value >= target),
    ]
  }
  const all = report.results
    .map(({ scenario }) => ({ title: scenario.title, value: times(report, scenario.key) }))
    .filter((r) => r.value !== null)
  const worst = all.length ? all.reduce((a, b) => (b.value < a.value ? b : a)) : null
  return [
    row('create ward occupant, durable, vs the Feathers peer', 'create', WRITES_TARGET),
    row('patch discharge, durable, vs the Feathers peer', 'patch', WRITES_TARGET),
    [
      'no scenario below this × the Feathers peer (slowest named)',
      `≥ ${FLOOR_TARGET}×`,
      worst ? `${worst.value.toFixed(2)}× (${worst.title})` : 'not run',
      worst ? met(worst.value >= FLOOR_TARGET) : '',
    ],
  ]
}

/** The peer's own runs, so its non-2xx, latencies and CPU can be read too. */
export function peerSection(peer) {
  const body = peer.results.map(({ scenario, result }) => {
    if (result.skipped) return [scenario.title, `skipped: ${result.skipped}`, '', '', '', '', '']
    const cpu = Number.isFinite(result.cpuMicros) ? num(result.cpuMicros) : ''
    return [
      scenario.title,
      num(result.rps),
      String(result.p50),
      String(result.p99),
      String(result.non2xx) + (result.errors ? ` (+${result.errors} errors)` : ''),
      cpu,
      result.hwm ? mb(result.hwm) : '',
    ]
  })
  return [
    '#### The Feathers peer (same run, same Node, same rows and tokens)',
    '',
    'FeathersJS v5, `@feathersjs/koa` REST, a `@feathersjs/knex` service on SQLite (WAL, `synchronous=FULL`); ' +
      `${num(peer.seeded.count)} occupants copied from the service's seeded file. Peak RSS ${mb(peer.peakRss)} MB.`,
    '',
    table(['scenario', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'peer CPU µs/req', 'peak RSS MB so far'], body),
  ].join('\n')
}
