import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { runCli } from '../../../cli/run.js'
import { bearer, buildTestApp } from '../../helper.js'
import { capture } from '../capture.js'

const digest = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex')

t.test('smoke runs on a copy: the database and its folder are byte for byte as they were', async (t) => {
  const dir = t.testdir()
  const path = join(dir, 'ward.db')
  const { app, tokens } = await buildTestApp(t, { DATABASE_PATH: path })
  await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(tokens.write),
    payload: { encounter: 'e', bed: 'B-1', occupiedBy: 'p' },
  })
  await app.close()
  const before = digest(path)
  const filesBefore = readdirSync(dir).sort()
  t.same(filesBefore, ['ward.db'], 'a cleanly closed database is one file')

  const io = capture()
  t.equal(await runCli(['--database', path, 'smoke'], io), 0)
  t.same(io.stdout.slice(0, 1), [`copied ${path} to a scratch file`])
  t.same(
    io.stdout.slice(1).map((line) => line.split(':')[0]),
    ['ok   admit', 'ok   active beds', 'ok   discharge', 'ok   render', 'ok   audit', 'smoke test passed'],
    'one line per step',
  )
  t.equal(digest(path), before, 'the file is unchanged')
  t.same(readdirSync(dir).sort(), filesBefore, 'no -wal or -shm left behind')
})

t.test('smoke works while the server has the file open, and reports a failure with exit 1', async (t) => {
  const path = join(t.testdir(), 'live.db')
  const { app, tokens } = await buildTestApp(t, { DATABASE_PATH: path })
  const io = capture()
  t.equal(await runCli(['--database', path, 'smoke'], io), 0, 'a consistent copy under a running server')
  t.equal(io.stdout.at(-1), 'smoke test passed')
  const list = await app.inject({ url: '/ward-occupants?facility=smoke-test', headers: bearer(tokens.admin) })
  t.equal(list.json().total, 0, 'the running database got none of the smoke records')

  // A file the service cannot open as its database.
  const broken = join(t.testdir(), 'not-a-database.db')
  writeFileSync(broken, 'this is not SQLite')
  const failed = capture()
  t.equal(await runCli(['--database', broken, 'smoke'], failed), 1)
  t.match(failed.stderr.join('\n'), /facility-service: /)

  const missing = capture()
  t.equal(await runCli(['--database', join(t.testdir(), 'nope.db'), 'smoke'], missing), 1)
  t.match(missing.stderr.join('\n'), /no database at/)
  t.notOk(existsSync(join(t.testdir(), 'nope.db')), 'and creates nothing')
})

t.test('the first failing step stops the smoke test and names the step', async (t) => {
  const { build } = await import('../../../index.js')
  const example = new URL('../../../examples/smoke-test.mjs', import.meta.url).href
  const { smokeTest, SmokeFailure } = (await import(example)) as {
    smokeTest: (service: unknown, print: (line: string) => void) => Promise<void>
    SmokeFailure: new () => Error
  }
  const service = await build({ database: ':memory:' })
  t.teardown(() => service.close())
  // The same service, with a render that has gone wrong after an upgrade.
  const broken = {
    ...service,
    inject: async (request: { url: string; method?: string }) => {
      const res = await service.inject(request as never)
      return request.url.endsWith('/render') ? { ...res, body: '<h1>something else</h1>' } : res
    },
  }
  const lines: string[] = []
  const failure = await smokeTest(broken, (line) => lines.push(line)).catch((error: unknown) => error)
  t.ok(failure instanceof SmokeFailure)
  t.match((failure as Error).message, /^render: /)
  t.same(
    lines.map((l) => l.split(':')[0]),
    ['ok   admit', 'ok   active beds', 'ok   discharge'],
    'the steps before it passed; none after it ran',
  )
})
