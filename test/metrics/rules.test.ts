import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'tap'
import { PROJECT_ROOT } from '../../lib/product-files.js'

const RULES = join(PROJECT_ROOT, 'examples/prometheus/facility-service.rules.yml')
const DASHBOARD = join(PROJECT_ROOT, 'examples/prometheus/facility-service.dashboard.json')

/** The names the service defines (metrics/*.ts), each with the series a histogram adds. */
function definedNames(): Set<string> {
  const names = new Set<string>()
  const dir = join(PROJECT_ROOT, 'metrics')
  for (const file of readdirSync(dir)) {
    const source = readFileSync(join(dir, file), 'utf8')
    for (const [, name] of source.matchAll(/'(facility_service_\w+)'/g))
      for (const suffix of ['', '_bucket', '_count', '_sum']) names.add(`${name}${suffix}`)
  }
  return names
}

const usedNames = (text: string) => new Set(text.match(/facility_service_\w+/g) ?? [])

test('the alert rules pass promtool, and their unit tests (the silent feed, parked, overdue backups)', async (t) => {
  const checked = execFileSync('promtool', ['check', 'rules', RULES], { encoding: 'utf8' })
  t.match(checked, /SUCCESS: \d+ rules found/)
  const tested = execFileSync('promtool', ['test', 'rules', join(PROJECT_ROOT, 'test/metrics/rules-unit.yml')], {
    encoding: 'utf8',
  })
  t.match(tested, /SUCCESS/)
})

test('the rules and the dashboard name only metrics the service has', async (t) => {
  const defined = definedNames()
  t.ok(defined.size > 20, `the service's names found (${defined.size})`)
  const dashboard = readFileSync(DASHBOARD, 'utf8')
  const panels = (JSON.parse(dashboard) as { panels: { targets: { expr: string }[] }[] }).panels
  t.ok(panels.length >= 10, 'the dashboard has its panels')
  for (const [what, text] of [
    ['rules', readFileSync(RULES, 'utf8')],
    ['dashboard', dashboard],
  ] as const)
    for (const name of usedNames(text)) t.ok(defined.has(name), `${what}: ${name} is a metric of the service`)
})
