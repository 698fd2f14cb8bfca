// The benchmark's output: a table on stdout and the generated sections of docs/PERFORMANCE.md.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, totalmem } from 'node:os'
import { join } from 'node:path'
import { adtSection } from './adt.js'
import { btreeSection } from './btrees.js'
import { fanoutSection } from './feed/report.js'
import { limitSection } from './limit/report.js'
import { mb, met, num, table } from './markdown.js'
import { metricsCostSection } from './metrics-cost.js'
import { peerTargetRows, peerTurnsSection } from './peer/report.js'
import { ROOT } from './processes.js'

const REPORT = join(ROOT, 'docs', 'PERFORMANCE.md')
const RSS_TARGET_MB = 250
const IDLE_RSS_TARGET_MB = 100
const SCALE_TARGET = 1.5
const NOTIFICATION_KEYS = ['notifications', 'notif-unseen', 'notif-count', 'notif-seen']
const SCALE_TARGETED = new Set(['list', ...NOTIFICATION_KEYS])

export function machine() {
  let cpu = cpus()[0]?.model?.trim() || 'unknown CPU'
  try {
    // Some virtual machines report only the vendor in os.cpus(); /proc/cpuinfo may say more.
    const more = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim()
    if (more && more.length > cpu.length) cpu = more
  } catch {}
  return {
    cpu,
    cores: cpus().length,
    memoryGb: (totalmem() / 2 ** 30).toFixed(1),
    node: process.version,
    load: loadavg()
      .map((l) => l.toFixed(2))
      .join(' '),
  }
}

const cpu = (result) => (Number.isFinite(result.cpuMicros) ? num(result.cpuMicros) : '')

function rows(report) {
  const out = [
    [
      'bare Fastify route (limit of the stack)',
      num(report.bare.rps),
      String(report.bare.p50),
      String(report.bare.p99),
      String(report.bare.non2xx),
      cpu(report.bare),
      '',
      '1.00',
      '',
    ],
  ]
  for (const { scenario, result } of report.results) {
    if (result.skipped) {
      out.push([scenario.title, `skipped: ${result.skipped}`, '', '', '', '', '', '', ''])
      continue
    }
    const ratio = result.rps / report.bare.rps
    const target = scenario.target ? `≥ ${scenario.target} ${met(ratio >= scenario.target)}` : ''
    let non2xx = String(result.non2xx) + (result.errors ? ` (+${result.errors} errors)` : '')
    if (result.seconds < report.options.duration - 0.5) non2xx += ` (pool used up after ${result.seconds.toFixed(1)} s)`
    out.push([
      scenario.title,
      num(result.rps),
      String(result.p50),
      String(result.p99),
      non2xx,
      cpu(result),
      result.hwm ? mb(result.hwm) : '',
      ratio.toFixed(2),
      target,
    ])
  }
  return out
}

function scaleRows(scale) {
  return scale.rows.map(({ scenario, base, scaled }) => {
    if (scaled.skipped) return [scenario.title, num(base.rps), `skipped: ${scaled.skipped}`, '', '']
    const slowdown = base.rps / scaled.rps
    const target = SCALE_TARGETED.has(scenario.key) ? `≤ ${SCALE_TARGET}× ${met(slowdown <= SCALE_TARGET)}` : ''
    return [
      scenario.title,
      `${num(base.rps)} (p99 ${base.p99} ms)`,
      `${num(scaled.rps)} (p99 ${scaled.p99} ms)`,
      `${slowdown.toFixed(2)}×`,
      target,
    ]
  })
}

/** The targets table of issue 7, each marked met or not met from this run. */
function targetsTable(report) {
  const ratio = (key) => {
    const found = report.results.find((r) => r.scenario.key === key)
    return found && !found.result.skipped ? found.result.rps / report.bare.rps : null
  }
  const rows = [
    ['get by id (auth, facility check, serialization included)', 'get', 0.75],
    ['list 50', 'list', 0.15],
    ['create ward occupant, durable', 'create', 0.25],
    ['patch discharge, durable', 'patch', 0.25],
    ['list 50 notifications of one account', 'notifications', 0.15],
    ['unseen notification count', 'notif-count', 0.3],
  ].map(([what, key, target]) => {
    const value = ratio(key)
    return [
      what,
      `≥ ${target}`,
      value === null ? 'not run' : value.toFixed(2),
      value === null ? '' : met(value >= target),
    ]
  })
  const list = report.scale?.rows.find((r) => r.scenario.key === 'list')
  const slowdown = list && !list.scaled.skipped ? list.base.rps / list.scaled.rps : null
  rows.push([
    `list 50 at ${num(report.scale?.count ?? 1_000_000)} occupants vs at ${num(report.options.occupants)}`,
    `≤ ${SCALE_TARGET}× slower`,
    slowdown === null ? 'not measured in this run (`--compare 1000000`)' : `${slowdown.toFixed(2)}×`,
    slowdown === null ? '' : met(slowdown <= SCALE_TARGET),
  ])
  const notificationRows = report.scale?.rows.filter((r) => NOTIFICATION_KEYS.includes(r.scenario.key)) ?? []
  const worst = Math.max(...notificationRows.filter((r) => !r.scaled.skipped).map((r) => r.base.rps / r.scaled.rps))
  rows.push([
    `notifications at ${num(report.scale?.notifications ?? 1_000_000)} vs at ${num(report.options.notifications)}, slowest scenario`,
    `≤ ${SCALE_TARGET}× slower`,
    Number.isFinite(worst) ? `${worst.toFixed(2)}×` : 'not measured in this run (`--compare`)',
    Number.isFinite(worst) ? met(worst <= SCALE_TARGET) : '',
  ])
  rows.push([
    'server RSS idle after start (before the scenarios)',
    `≤ ${IDLE_RSS_TARGET_MB} MB`,
    `${mb(report.idleRss)} MB`,
    met(report.idleRss / 2 ** 20 <= IDLE_RSS_TARGET_MB),
  ])
  const rssMb = report.peakRss / 2 ** 20
  rows.push([
    'server peak RSS during the whole bench',
    `≤ ${RSS_TARGET_MB} MB`,
    `${mb(report.peakRss)} MB`,
    met(rssMb <= RSS_TARGET_MB),
  ])
  if (report.peer) rows.push(...peerTargetRows(report))
  const against = report.peer ? 'the bare route or the Feathers peer' : 'the bare route'
  return table([`target (ratios to ${against}, same run)`, 'target', 'this run', ''], rows)
}

function resultsSection(report) {
  const { info, options } = report
  const rssOk = report.peakRss / 2 ** 20 <= RSS_TARGET_MB
  const lines = [
    `### Run of ${report.started.toISOString().slice(0, 16).replace('T', ' ')} UTC`,
    '',
    `Machine: ${info.cpu}, ${info.cores} cores, ${info.memoryGb} GB; Node ${info.node} for every contender (bare route, service${report.peer ? ', Feathers peer' : ''}); load average at start ${info.load}` +
      ' (the machine is shared, so absolute numbers move; the ratios are what counts).',
    `Options: ${num(options.occupants)} ward occupants, ${num(options.templates)} form templates, ` +
      `${num(options.notifications)} notifications; ${options.connections} connections; ${options.warmup} s warm-up then ` +
      `${options.duration} s per scenario; LOG_LEVEL=${options.logLevel}, rate limit off.`,
    `The bare route was measured before (${num(report.bareBefore.rps)} req/s) and after (${num(report.bareAfter.rps)} req/s) ` +
      'the scenarios; ratios use the mean.',
    '',
    targetsTable(report),
    '',
    table(
      [
        'scenario',
        'req/s',
        'p50 ms',
        'p99 ms',
        'non-2xx',
        'server CPU µs/req',
        'peak RSS MB so far',
        'ratio to bare',
        'target',
      ],
      rows(report),
    ),
    '',
    `Server peak RSS during the whole run: **${mb(report.peakRss)} MB** (target ≤ ${RSS_TARGET_MB} MB: ${met(rssOk)}),` +
      ' its render workers included.',
  ]
  for (const note of report.notes) lines.push(`- ${note}`)
  if (report.limit) lines.push('', limitSection(report))
  if (report.peer) lines.push('', peerTurnsSection(report))
  if (report.scale) lines.push('', scaleSection(report.scale))
  if (report.fanout) lines.push('', fanoutSection(report.fanout))
  if (report.btrees) lines.push('', btreeSection(report.btrees))
  if (report.adt) lines.push('', adtSection(report.adt))
  if (report.metricsCost) lines.push('', metricsCostSection(report.metricsCost))
  return lines.join('\n')
}

function scaleSection(scale) {
  return [
    `#### ${num(scale.count)} vs ${num(scale.base)} ward occupants, ${num(scale.notifications)} vs ${num(scale.baseNotifications)} notifications (same run)`,
    '',
    `Seeding ${num(scale.count)} occupants directly into SQLite took ${scale.seedSeconds.toFixed(0)} s, ` +
      `${num(scale.notifications)} notifications ${scale.notificationSeconds.toFixed(0)} s; ` +
      `that server's peak RSS was ${mb(scale.peakRss)} MB.`,
    '',
    table(
      ['scenario', `req/s at ${num(scale.base)}`, `req/s at ${num(scale.count)}`, 'slower by', 'target'],
      scaleRows(scale),
    ),
  ].join('\n')
}

export function printTable(report) {
  process.stdout.write(`\n${resultsSection(report)}\n`)
}

const START = '<!-- bench:results:start -->'
const END = '<!-- bench:results:end -->'

/** Replaces the generated part of docs/PERFORMANCE.md; the hand-written parts stay. */
export function writeReport(report) {
  const generated = `${START}\n${resultsSection(report)}\n${END}`
  const text = existsSync(REPORT) ? readFileSync(REPORT, 'utf8') : `# Performance\n\n${START}\n${END}\n`
  const start = text.indexOf(START)
  const end = text.indexOf(END)
  const next =
    start >= 0 && end > start
      ? text.slice(0, start) + generated + text.slice(end + END.length)
      : `${text.trimEnd()}\n\n${generated}\n`
  writeFileSync(REPORT, next)
  process.stderr.write(`written to ${REPORT}\n`)
}
