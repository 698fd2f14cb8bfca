import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import t from 'tap'
import { PROJECT_ROOT } from '../lib/product-files.js'

/**
 * `npm test` leaves the long suites out (package.json's tap.exclude); they run in scripts of
 * their own, which CI (.ci/run) runs. Nothing may fall between: each test file runs in `npm test`
 * or in one of those scripts, and every property test is in the deep run.
 */
const pkg = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
  scripts: Record<string, string>
  tap: { exclude: string[] }
}
const LONG_SCRIPTS = ['test:long', 'crash-test']

function* testFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) yield* testFiles(path)
    else if (entry.name.endsWith('.test.ts')) yield relative(PROJECT_ROOT, path)
  }
}

const files = [...testFiles(join(PROJECT_ROOT, 'test'))].sort()
const named = (script: string) => (pkg.scripts[script] ?? '').split(/\s+/).filter((word) => word.endsWith('.test.ts'))

t.test('each test file left out of npm test runs in a script of its own, and only there', async (t) => {
  const excluded = [...pkg.tap.exclude].sort()
  const long = LONG_SCRIPTS.flatMap(named).sort()
  t.same(long, excluded, `${LONG_SCRIPTS.join(' and ')} run exactly what npm test leaves out`)
  for (const file of excluded) t.ok(files.includes(file), `${file} exists`)
})

t.test('every property test is in the deep run', async (t) => {
  const properties = files.filter((file) =>
    /^import [^\n]* from 'fast-check'/m.test(readFileSync(join(PROJECT_ROOT, file), 'utf8')),
  )
  t.same(named('test:deep').sort(), properties)
  t.match(pkg.scripts['test:deep'], /^FUZZ_RUNS=\d+ /, 'at a depth of its own')
})

t.test('CI runs npm test and every script of the long suites', async (t) => {
  const ci = readFileSync(join(PROJECT_ROOT, '.ci', 'run'), 'utf8')
  for (const script of ['test', ...LONG_SCRIPTS, 'test:deep']) {
    const command = script === 'test' ? 'npm test' : `npm run ${script}`
    t.match(ci, new RegExp(`^[^#\\n]*${command}\\b`, 'm'), command)
  }
})
