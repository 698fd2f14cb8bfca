// What the operators' metrics cost (docs/METRICS.md): the same requests on the service with the
// metrics on (METRICS_PORT set, scraped) and off, in the same run, twice in the order off, on, on,
// off so that a machine getting busier or quieter weighs on both alike; the median of each side. The measure is the server's own
// CPU time per request (/proc), as everywhere in the bench. Target: on costs at most 3 % more.
// `npm run bench -- --only metrics`.
import { join } from 'node:path'
import { load, probe } from './load.js'
import { freePort, startService } from './processes.js'
import { scenarios } from './scenarios.js'
import { seedDatabase } from './seed.js'

export const METRICS_COST_TARGET = 1.03
const KEYS = ['get', 'create']
const ORDER = ['off', 'on', 'on', 'off', 'off', 'on', 'on', 'off']

async function measureOnce(database, mode, ctx, loadOptions, logLevel) {
  const metricsPort = mode === 'on' ? await freePort() : null
  const env = metricsPort === null ? {} : { METRICS_PORT: String(metricsPort) }
  const service = await startService({ database, logLevel, env })
  const results = {}
  try {
    for (const scenario of scenarios(ctx)) {
      if (!KEYS.includes(scenario.key)) continue
      const next = scenario.make()
      await probe(service.url, next)
      results[scenario.key] = await load(service.url, next, { ...loadOptions, cpuSeconds: service.cpuSeconds })
    }
    // Scraped as Prometheus would, and checked to have counted the requests.
    if (metricsPort !== null) {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
      if (!/facility_service_http_requests_total\{route="\/ward-occupants\/:id"/.test(text))
        throw new Error('the metrics listener did not count the requests')
    }
  } finally {
    await service.stop()
  }
  return results
}

const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length
/** The middle of the runs: one disturbed by another process on the shared machine weighs nothing. */
function median(values) {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length / 2
  return sorted.length % 2 === 1 ? sorted[Math.floor(mid)] : (sorted[mid - 1] + sorted[mid]) / 2
}

/** Runs the comparison; returns per scenario the CPU µs per request off and on, and their ratio. */
export async function runMetricsCost({ workdir, log, loadOptions, logLevel = 'warn', occupants = 5000 }) {
  const database = join(workdir, 'metrics-cost.db')
  const seeded = await seedDatabase(database, { occupants, notifications: 0 })
  const ctx = { tokens: seeded.tokens, sample: seeded.sample, runId: `m${Date.now().toString(36)}`, patchPool: [] }
  const runs = { off: [], on: [] }
  for (const [i, mode] of ORDER.entries()) {
    log(`  metrics ${mode} (${i + 1}/${ORDER.length})`)
    ctx.runId = `m${i}${Date.now().toString(36)}`
    runs[mode].push(await measureOnce(database, mode, ctx, loadOptions, logLevel))
  }
  return KEYS.map((key) => {
    const off = median(runs.off.map((r) => r[key].cpuMicros))
    const on = median(runs.on.map((r) => r[key].cpuMicros))
    return {
      key,
      off,
      on,
      ratio: on / off,
      rpsOff: mean(runs.off.map((r) => r[key].rps)),
      rpsOn: mean(runs.on.map((r) => r[key].rps)),
    }
  })
}

export function metricsCostSection(rows) {
  const line = (cells) => `| ${cells.join(' | ')} |`
  return [
    '#### Cost of the metrics (METRICS_PORT set vs unset, same run, order off, on, on, off twice; medians)',
    '',
    line(['scenario', 'CPU µs/req off', 'CPU µs/req on', 'on / off', 'target', '', 'req/s off', 'req/s on']),
    line(['---', '---', '---', '---', '---', '---', '---', '---']),
    ...rows.map((r) =>
      line([
        r.key,
        r.off.toFixed(0),
        r.on.toFixed(0),
        r.ratio.toFixed(3),
        `≤ ${METRICS_COST_TARGET}`,
        r.ratio <= METRICS_COST_TARGET ? 'met' : 'not met',
        r.rpsOff.toFixed(0),
        r.rpsOn.toFixed(0),
      ]),
    ),
  ].join('\n')
}
