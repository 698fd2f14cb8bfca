// What the operators' metrics cost (docs/METRICS.md): the same requests on the service with the
// metrics on (METRICS_PORT set, scraped) and off, in the same run. A cost of 3 % is far below what
// separates two server processes on a shared machine (the same code lands 5-15 % apart in CPU per
// request, from one start to the next), so the two copies run in one process
// (bench/metrics-pair-server.js) and take the load in short turns, off and on alternately, the
// order reversed every round: the process's CPU time in a turn (its threads' schedstat, in ns) is
// what that copy cost, under the same machine, JIT and heap. What the metrics do process-wide
// (the default metrics' GC observer and event-loop-delay timer) runs in both copies' turns: it costs
// per collection and per 10 ms, not per request. `npm run bench -- --only metrics`.
import { copyFileSync } from 'node:fs'
import { join } from 'node:path'
import { load, probe } from './load.js'
import { quartilesText } from './markdown.js'
import { startMetricsPair } from './processes.js'
import { scenarios } from './scenarios.js'
import { seedDatabase } from './seed.js'
import { medianOfPairs, microsPerRequest, playTurns } from './turns.js'

export const METRICS_COST_TARGET = 1.03
const KEYS = ['get', 'create']
const SIDES = ['off', 'on']

/** Scraped as Prometheus would, and checked to have counted the requests of the "on" copy only. */
async function checkScraped(pair, requestsOn) {
  const text = await (await fetch(pair.metricsUrl)).text()
  const counted = [...text.matchAll(/^facility_service_http_requests_total\{[^}]*\} (\d+)/gm)].reduce(
    (sum, m) => sum + Number(m[1]),
    0,
  )
  if (counted < requestsOn) throw new Error(`the metrics counted ${counted} requests of ${requestsOn}`)
}

/** Runs the comparison; per scenario the CPU µs per request off and on, their ratio, and the turns' spread. */
export async function runMetricsCost({
  workdir,
  log,
  loadOptions,
  logLevel = 'warn',
  occupants = 5000,
  rounds = 20,
  turnSeconds = 0.5,
  keys = KEYS,
}) {
  const seededPath = join(workdir, 'metrics-cost.db')
  const seeded = await seedDatabase(seededPath, { occupants, notifications: 0 })
  const databaseOn = join(workdir, 'metrics-cost-on.db')
  copyFileSync(seededPath, databaseOn)
  const pair = await startMetricsPair({ database: seededPath, databaseOn, logLevel })
  try {
    const rows = []
    let requestsOn = 0
    for (const key of keys) {
      const scenario = scenarios({
        tokens: seeded.tokens,
        sample: seeded.sample,
        runId: `m${Date.now().toString(36)}`,
        patchPool: [],
      }).find((s) => s.key === key)
      // One request stream per copy, kept over its turns: creates never reuse a bed.
      const nexts = { off: scenario.make(), on: scenario.make() }
      for (const side of SIDES) {
        await probe(pair.urls[side], nexts[side])
        await load(pair.urls[side], nexts[side], { ...loadOptions, duration: loadOptions.warmup, warmup: 0 })
      }
      log(`  metrics ${key}: ${rounds} rounds of a ${turnSeconds} s turn off and on`)
      const servers = Object.fromEntries(SIDES.map((side) => [side, { url: pair.urls[side], cpuNanos: pair.cpuNanos }]))
      const { totals } = await playTurns({
        sides: SIDES,
        servers,
        nexts,
        rounds,
        turnSeconds,
        connections: loadOptions.connections,
        refuse(side, result) {
          if (result.non2xx > 0 || result.errors > 0)
            throw new Error(`metrics ${side}: ${result.non2xx} non-2xx answers`)
        },
      })
      requestsOn += totals.on.requests
      rows.push(summarize(key, totals))
    }
    await checkScraped(pair, requestsOn)
    return rows
  } finally {
    await pair.stop()
  }
}

function summarize(key, totals) {
  return {
    key,
    off: microsPerRequest(totals.off),
    on: microsPerRequest(totals.on),
    ...medianOfPairs(totals.on, totals.off),
    requests: totals.off.requests + totals.on.requests,
  }
}

export function metricsCostSection(rows) {
  const line = (cells) => `| ${cells.join(' | ')} |`
  return [
    '#### Cost of the metrics (the service twice in one process, one copy with METRICS_PORT set, loaded in alternate turns; CPU per request)',
    '',
    line([
      'scenario',
      'CPU µs/req off (all turns)',
      'CPU µs/req on (all turns)',
      'on / off (median of the pairs of turns)',
      'target',
      '',
      'quartiles of the pairs',
      'requests',
    ]),
    line(['---', '---', '---', '---', '---', '---', '---', '---']),
    ...rows.map((r) =>
      line([
        r.key,
        r.off.toFixed(1),
        r.on.toFixed(1),
        r.ratio.toFixed(3),
        `≤ ${METRICS_COST_TARGET}`,
        r.ratio <= METRICS_COST_TARGET ? 'met' : 'not met',
        quartilesText(r, 3),
        r.requests,
      ]),
    ),
  ].join('\n')
}
