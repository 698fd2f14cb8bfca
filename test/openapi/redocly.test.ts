import { execFile } from 'node:child_process'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { PROJECT_ROOT } from '../../lib/product-files.js'
import { dumpOpenapi } from './document.js'

const run = promisify(execFile)

t.test('redocly lint, recommended rules: no errors and no warnings', async (t) => {
  const { dir, file } = await dumpOpenapi()
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const redocly = join(PROJECT_ROOT, 'node_modules', '.bin', 'redocly')
  const { stdout } = await run(redocly, ['lint', '--extends=recommended', '--format=json', file], {
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    maxBuffer: 64 * 1024 * 1024,
  }).catch((error: { stdout?: string; stderr?: string }) => ({ stdout: error.stdout ?? error.stderr ?? '' }))
  const report = JSON.parse(stdout.slice(stdout.indexOf('{'))) as {
    totals: { errors: number; warnings: number }
    problems: { ruleId: string; message: string }[]
  }
  const problems = report.problems.map((p) => `${p.ruleId}: ${p.message}`)
  t.same(report.totals, { ...report.totals, errors: 0, warnings: 0 }, problems.slice(0, 20).join('\n'))
})
