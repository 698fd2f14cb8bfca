import { execFileSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { PROJECT_ROOT } from '../lib/product-files.js'

const npm = (args: string[], cwd: string) =>
  execFileSync('npm', args, {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, npm_config_loglevel: 'error' },
  })

/**
 * As a consumer would use it: pack the project, install the tarball into an empty project, run
 * the example there, and type-check a TypeScript script against the shipped declarations.
 */
t.test('the packed package works from an empty project, by its public entry point only', async (t) => {
  const dir = t.testdir({
    consumer: {
      'package.json': JSON.stringify({ name: 'ward-it-scripts', private: true, type: 'module' }),
      'check.ts': [
        "import { build, type FacilityService, type ScriptToken } from 'facility-service'",
        "const service: FacilityService = await build({ database: ':memory:', settings: { BED_POLICY: 'shared' } })",
        "const token: ScriptToken = service.createToken({ account: 'it', role: 'read' })",
        "const headers = { authorization: 'Bearer ' + token.token }",
        "const res = await service.inject({ url: '/ward-occupants', headers })",
        'const status: number = res.statusCode',
        'token.revoke()',
        'await service.close()',
        'export { status }',
        '',
      ].join('\n'),
      'tsconfig.json': JSON.stringify({
        compilerOptions: {
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          target: 'ES2022',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
        },
        include: ['check.ts'],
      }),
      'wrong.ts': "import { build } from 'facility-service'\nawait build({ database: 1 })\n",
      'deep.mjs': "await import('facility-service/dist/app.js')\n",
    },
  })
  const consumer = join(dir, 'consumer')
  const packed = npm(['pack', '--pack-destination', dir, PROJECT_ROOT], PROJECT_ROOT)
    .trim()
    .split('\n')
    .at(-1) as string
  const tarball = join(dir, packed)
  const files = execFileSync('tar', ['tzf', tarball], { encoding: 'utf8' }).split('\n')
  t.ok(
    files.includes('package/dist/index.js') && files.includes('package/dist/index.d.ts'),
    'entry point and its types',
  )
  t.ok(files.includes('package/schema.sql') && files.includes('package/examples/smoke-test.mjs'), 'schema and example')
  t.same(
    files.filter((f) => /^package\/(test|bench)\//.test(f) || (/\.ts$/.test(f) && !f.endsWith('.d.ts'))),
    [],
    'no tests, no bench, no sources',
  )

  // better-sqlite3 ships its binaries (prebuilds/); no install script has anything to build.
  npm(['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', tarball], consumer)
  const example = join(consumer, 'node_modules', 'facility-service', 'examples', 'smoke-test.mjs')
  const output = execFileSync(process.execPath, [example], { cwd: consumer, encoding: 'utf8' })
  t.match(output, /ok {3}admit[\s\S]*ok {3}audit[\s\S]*smoke test passed/, 'the example passes, one line per step')
  t.equal(output.trim().split('\n').length, 6)

  const tsc = join(PROJECT_ROOT, 'node_modules', 'typescript', 'bin', 'tsc')
  execFileSync(process.execPath, [tsc, '-p', consumer], { cwd: consumer, encoding: 'utf8' })
  t.pass('a script type-checks against the shipped declarations')
  const wrong = () =>
    execFileSync(process.execPath, [tsc, '--noEmit', '--module', 'NodeNext', '--skipLibCheck', 'wrong.ts'], {
      cwd: consumer,
      encoding: 'utf8',
    })
  t.throws(wrong, 'and a wrong call does not')
  t.throws(
    () => execFileSync(process.execPath, ['deep.mjs'], { cwd: consumer, stdio: 'pipe' }),
    'internals are not reachable by a deep import',
  )
  t.notOk(readdirSync(consumer).includes('data'), 'nothing was written beside the script')
})
