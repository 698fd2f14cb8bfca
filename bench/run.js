// The benchmark (issue 7): `npm run bench [-- options]`. See docs/PERFORMANCE.md for how to read it.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { runAdt } from './adt.js'
import { countBtrees } from './btrees.js'
import { runFanout } from './feed/fanout.js'
import { fhirNotes, fhirScenarios, prepareFhirWard } from './fhir.js'
import { seedLimit } from './limit/seed.js'
import { runLimitTurns } from './limit/turns.js'
import { load, probe } from './load.js'
import { runMetricsCost } from './metrics-cost.js'
import { args, options } from './options.js'
import { seedPeer } from './peer/seed.js'
import { startBare, startService } from './processes.js'
import { providerNote, providerTokens } from './provider-tokens.js'
import { machine, printTable, writeReport } from './report.js'
import { formTemplateBody, scenarios } from './scenarios.js'
import { FACILITIES, facilityName, seedDatabase } from './seed.js'

// The scenarios the Feathers peer has (bench/peer/server.js serves ward occupants only).
const PEER_KEYS = ['get', 'list', 'create', 'patch']
const withPeer = !args['no-peer'] && PEER_KEYS.some((key) => !options.only || options.only.has(key))
// The database limit runs the same four scenarios (bench/limit/server.js).
const withLimit = PEER_KEYS.some((key) => !options.only || options.only.has(key))
const loadOptions = { connections: options.connections, duration: options.duration, warmup: options.warmup }
const log = (line) => process.stderr.write(`${line}\n`)
const workdir = mkdtempSync(join(tmpdir(), 'facility-bench-'))

/** The service's Node flags: a CPU profile of its whole run into --profile's folder. */
function profileArgs() {
  return args.profile ? ['--cpu-prof', `--cpu-prof-dir=${args.profile}`] : []
}

async function measureBare() {
  const bare = await startBare()
  try {
    return await load(bare.url, () => ({ method: 'GET', path: '/bare' }), {
      ...loadOptions,
      cpuSeconds: bare.cpuSeconds,
    })
  } finally {
    await bare.stop()
  }
}

/** Seeds a database and starts the service on it; the caller stops it. */
async function prepareService(occupants, name, patchPool = 0, notifications = options.notifications, env = {}) {
  const database = join(workdir, `${name}.db`)
  log(`seeding ${occupants} ward occupants (+${patchPool} to discharge), ${notifications} notifications`)
  const seeded = await seedDatabase(database, { occupants, notifications, patchPool })
  log(
    `  occupants seeded in ${seeded.occupantSeconds.toFixed(1)} s, notifications in ${seeded.notifications.seconds.toFixed(1)} s`,
  )
  if (seeded.notifications.skipped) log(`  notifications: ${seeded.notifications.skipped}`)
  const nodeArgs = profileArgs()
  // Every connection's print may wait for the worker: the render scenario measures prints, not refusals.
  const queue = { RENDER_QUEUE_MAX: String(options.connections), ...env }
  const service = await startService({ database, logLevel: options.logLevel, nodeArgs, env: queue, echo: args.verbose })
  return { service, seeded, database }
}

/** Form templates go through HTTP: 2 000 take a few seconds, and the service makes their ids. */
async function seedTemplates(service, ctx) {
  if (options.templates === 0) return 'not seeded (--templates 0)'
  let n = 0
  const next = () => {
    const f = n % FACILITIES
    const body = formTemplateBody(n++, facilityName(f))
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${ctx.tokens.admin}` }
    return { method: 'POST', path: '/form-templates', headers, body }
  }
  const templates = []
  const keep = (status, body) => {
    if (status !== 200) return
    const record = JSON.parse(body)
    templates.push({ id: record.id, facility: Number(record.facility.slice('ward-'.length)) })
  }
  const first = await probe(service.url, next)
  if (first.code === 'ROUTE_NOT_FOUND') return 'skipped: POST /form-templates does not exist yet'
  if (first.status !== 200) return `skipped: POST /form-templates answered ${first.status} ${first.body.slice(0, 200)}`
  keep(first.status, first.body)
  const amount = options.templates - 1
  if (amount < 1) {
    ctx.templates = templates
    return `${templates.length} seeded through HTTP`
  }
  // autocannon refuses more connections than requests
  const result = await load(service.url, next, { connections: Math.min(10, amount), amount, onResponse: keep })
  ctx.templates = templates
  return `${templates.length} seeded through HTTP (${result.non2xx} failed)`
}

async function runScenario(service, scenario) {
  const missing = scenario.needs?.()
  if (missing) return { skipped: missing }
  // One request maker for the probe and the run, so counters and pools carry on.
  const next = scenario.make()
  const first = await probe(service.url, next)
  if (first.status === 404 && first.code === 'ROUTE_NOT_FOUND') return { skipped: 'route does not exist yet' }
  if (first.status >= 300) log(`  note: the probe answered ${first.status} ${first.body.slice(0, 200)}`)
  else scenario.onResponse?.(first.status, first.body)
  const result = await load(service.url, next, {
    ...loadOptions,
    onResponse: scenario.onResponse,
    cpuSeconds: service.cpuSeconds,
  })
  return { ...result, hwm: service.hwmNow() }
}

async function main() {
  const runId = Date.now().toString(36)
  const started = new Date()
  const info = machine()
  log(`${info.cpu} x${info.cores}, Node ${info.node}; load average ${info.load}`)

  log('bare route (limit of the stack)')
  const bareBefore = await measureBare()

  // The main service also accepts provider tokens (issue 39): get-oidc compares with get.
  const provider = await providerTokens(
    workdir,
    Array.from({ length: FACILITIES }, (_, f) => facilityName(f)),
  )
  const main = await prepareService(options.occupants, 'main', options.patchPool, undefined, provider.env)
  const { service, seeded, database } = main
  // Two seconds after /health first answered, before any scenario: what a ward server holds waiting.
  await sleep(2000)
  const idleRss = service.rssNow()
  log(`server RSS idle after start: ${(idleRss / 2 ** 20).toFixed(0)} MB`)
  const ctx = {
    tokens: seeded.tokens,
    providerTokens: provider.tokens,
    sample: seeded.sample,
    toMark: seeded.notifications.toMark,
    runId,
    patchPool: [],
    templates: [],
  }
  const results = []
  let templateNote
  let peerSeed = null
  let limitSeed = null
  try {
    // Copied before any scenario writes, so the peer starts from the very rows the service did.
    if (withPeer) peerSeed = seedPeerDatabase(database, seeded.tokens)
    if (withLimit) {
      limitSeed = {
        database: join(workdir, 'limit.db'),
        tokens: join(workdir, 'limit-tokens.json'),
        // The service's own copy for the turns against the limit (bench/limit/turns.js).
        serviceDatabase: join(workdir, 'limit-service.db'),
      }
      seedLimit(limitSeed.database, limitSeed.tokens, database, seeded.tokens, limitSeed.serviceDatabase)
    }
    templateNote = await seedTemplates(service, ctx)
    log(`form templates: ${templateNote}`)
    log(`FHIR ward: ${await prepareFhirWard(service, database, ctx, options.only)}`)
    for (const scenario of [...scenarios(ctx), ...fhirScenarios(ctx)]) {
      if (options.only && !options.only.has(scenario.key)) continue
      log(`scenario: ${scenario.title}`)
      // The discharge scenario discharges what the create scenario admitted, then the seeded pool.
      if (scenario.key === 'patch') for (const id of seeded.pool) ctx.patchPool.push(id)
      results.push({ scenario, result: await runScenario(service, scenario) })
    }
  } finally {
    await service.stop()
  }
  const peakRss = service.peakRss()

  log('bare route again (the machine is shared: the ratio uses the mean of both)')
  const bareAfter = await measureBare()
  const bare = {
    ...bareBefore,
    rps: (bareBefore.rps + bareAfter.rps) / 2,
    cpuMicros: (bareBefore.cpuMicros + bareAfter.cpuMicros) / 2,
  }

  // The limit and the peer against a service of their own, in alternate turns: not against the
  // service measured above, minutes earlier, when the machine may have been another.
  const limit = limitSeed ? await measureLimit(limitSeed, peerSeed, seeded, ctx) : null
  const peer = peerSeed && limit ? { seeded: peerSeed.seeded, peakRss: limit.peerPeakRss } : null
  const quartiles = (q) => q.map((value) => value.toFixed(2)).join('-')
  for (const row of limit?.turns ?? []) {
    log(`  ${row.key}: ${row.ratio.toFixed(2)} of the limit (quartiles ${quartiles(row.quartiles)})`)
    if (row.peer) log(`  ${row.key}: ${row.peer.ratio.toFixed(2)}× peer (quartiles ${quartiles(row.peer.quartiles)})`)
  }

  let scale = null
  if (options.compare) scale = await compareScale(options.compare, results, ctx)

  let fanout = null
  if (!options.only || options.only.has('fanout')) {
    log('live feed fan-out (limit, service, peer)')
    fanout = await runFanout({
      workdir,
      log,
      streams: Number(args['fanout-streams']),
      rates: args['fanout-rates'].split(',').map(Number),
      seconds: Number(args['fanout-seconds']),
      createDuration: options.duration,
      createWarmup: options.warmup,
    })
  }

  log('b-trees written per create, discharge and admission')
  const btrees = await countBtrees()
  let adt = null
  if (!options.only || options.only.has('adt')) {
    log('ADT feed over MLLP (docs/ADT.md)')
    adt = await runAdt({
      workdir,
      log,
      seconds: options.duration,
      warmup: options.warmup,
      logLevel: options.logLevel,
      btrees: btrees.admission.length,
      nodeArgs: profileArgs(),
    })
  }

  let metricsCost = null
  if (!options.only || options.only.has('metrics')) {
    log('cost of the metrics (on vs off)')
    metricsCost = await runMetricsCost({ workdir, log, loadOptions, logLevel: options.logLevel })
  }

  const report = {
    started,
    info,
    options,
    bare,
    bareBefore,
    bareAfter,
    results,
    idleRss,
    peakRss,
    peer,
    limit,
    scale,
    fanout,
    adt,
    btrees,
    metricsCost,
    notes: [
      `form templates: ${templateNote}`,
      ...seededNotes(seeded),
      providerNote(results),
      ...fhirNotes(results),
    ].filter(Boolean),
  }
  printTable(report)
  if (!args['no-write']) writeReport(report)
}

function seedPeerDatabase(serviceDatabase, tokens) {
  const database = join(workdir, 'peer.db')
  const seeded = seedPeer(database, serviceDatabase, tokens)
  log(`Feathers peer: ${seeded.count} ward occupants and the tokens copied in ${seeded.seconds.toFixed(1)} s`)
  return { database, seeded }
}

/**
 * The database limit and the Feathers peer (unless --no-peer) against a service of their own on the
 * same four scenarios, in alternate turns.
 */
async function measureLimit(limitSeed, peerSeed, seeded, ctx) {
  log(`database limit${peerSeed ? ', Feathers peer' : ''} and a service of their own, in turns (bench/limit/turns.js)`)
  const keys = PEER_KEYS.filter((key) => !options.only || options.only.has(key))
  const { rows, peerPeakRss } = await runLimitTurns({
    limitSeed,
    peerDatabase: peerSeed?.database,
    seeded,
    ctx,
    keys,
    loadOptions,
    log,
    logLevel: options.logLevel,
    nodeArgs: profileArgs(),
  })
  return { turns: rows, peerPeakRss }
}

function seededNotes(seeded) {
  const n = seeded.notifications
  return [n.skipped ? `notifications: ${n.skipped}` : `notifications: ${n.count} seeded`]
}

const SCALED = ['get', 'list', 'list-bed', 'notifications', 'notif-unseen', 'notif-count', 'notif-seen']

/** The same list, get and notification scenarios on a second server seeded with `count` occupants. */
async function compareScale(count, baseResults, ctx) {
  const { service, seeded } = await prepareService(count, 'scale', 0, options.compareNotifications)
  const scaleCtx = {
    ...ctx,
    tokens: seeded.tokens,
    sample: seeded.sample,
    toMark: seeded.notifications.toMark,
    patchPool: [],
    templates: [],
  }
  const rows = []
  try {
    for (const scenario of scenarios(scaleCtx)) {
      if (!SCALED.includes(scenario.key)) continue
      const base = baseResults.find((r) => r.scenario.key === scenario.key)?.result
      if (!base || base.skipped) continue
      log(`scenario at ${count}: ${scenario.title}`)
      rows.push({ scenario, base, scaled: await runScenario(service, scenario) })
    }
  } finally {
    await service.stop()
  }
  return {
    count,
    base: options.occupants,
    notifications: options.compareNotifications,
    baseNotifications: options.notifications,
    rows,
    peakRss: service.peakRss(),
    seedSeconds: seeded.occupantSeconds,
    notificationSeconds: seeded.notifications.seconds,
  }
}

try {
  await main()
} finally {
  rmSync(workdir, { recursive: true, force: true })
}
