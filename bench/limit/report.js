// The database limit's part of the report: each of the four scenarios, its server CPU per request
// beside the service's, and the targets as a share of the limit (its CPU µs over the service's:
// 1.00 is the limit itself, 0.5 the service spending twice as much per request).
const num = (n) => n.toLocaleString('en-US', { maximumFractionDigits: 0 })
const met = (ok) => (ok ? 'met' : '**not met**')

export const LIMIT_TARGETS = { get: 0.75, list: 1.0, create: 0.6, patch: 0.5 }

function table(header, body) {
  const line = (cells) => `| ${cells.join(' | ')} |`
  return [line(header), line(header.map(() => '---')), ...body.map(line)].join('\n')
}

/** The service's share of the limit for a scenario both ran: limit CPU µs/req over the service's. */
function share(report, key) {
  const limit = report.limit?.results.find((r) => r.scenario.key === key)?.result
  const own = report.results.find((r) => r.scenario.key === key)?.result
  if (!limit || limit.skipped || !own || own.skipped) return null
  return { limit, own, value: limit.cpuMicros / own.cpuMicros }
}

export function limitSection(report) {
  const rows = report.limit.results.map(({ scenario, result }) => {
    const s = share(report, scenario.key)
    if (!s) return [scenario.title, 'skipped', '', '', '', '', '']
    const target = LIMIT_TARGETS[scenario.key]
    return [
      scenario.title,
      num(result.rps),
      String(result.non2xx),
      num(result.cpuMicros),
      num(s.own.cpuMicros),
      s.value.toFixed(2),
      target ? `≥ ${target} ${met(s.value >= target)}` : '',
    ]
  })
  return [
    '#### The database limit (same run, same Node, same rows)',
    '',
    'Bare Fastify and better-sqlite3 doing the same CRUD on a copy of the seeded file, durable, nothing else (`bench/limit/`). **of the limit**: its server CPU µs per request over the service’s.',
    '',
    table(
      ['scenario', 'limit req/s', 'non-2xx', 'limit CPU µs/req', 'service CPU µs/req', 'of the limit', 'target'],
      rows,
    ),
  ].join('\n')
}
