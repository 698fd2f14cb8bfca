import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { runCli } from '../../../cli/run.js'
import { productVersion } from '../../../lib/product-files.js'
import { listening, stopServer } from '../../reliability/server-process.js'
import { capture } from '../capture.js'

const serve = (args: string[], env: Record<string, string>) =>
  spawn(process.execPath, ['--import=tsx', 'cli.ts', 'serve', ...args], {
    env: { ...process.env, PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })

t.test('`serve` runs the server as server.ts does; --database stands for DATABASE_PATH', async (t) => {
  const dir = t.testdir()
  const server = await listening(
    serve(['--database', join(dir, 'ward.db')], { DATABASE_PATH: join(dir, 'not-this.db') }),
  )
  t.equal((await fetch(`${server.base}/health`)).status, 200)
  t.ok(existsSync(join(dir, 'first-admin-token')), 'the first-start token beside the database')
  t.notOk(existsSync(join(dir, 'not-this.db')))
  t.equal(await stopServer(server), 0, 'SIGTERM: exit 0')
})

t.test('`serve` with a bad setting stops with the message server.ts gives', async (t) => {
  const child = serve([], { PORT: 'abc', DATABASE_PATH: join(t.testdir(), 'x.db') })
  let stderr = ''
  child.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  const [code] = await once(child, 'exit')
  t.equal(code, 1)
  t.match(stderr, /invalid configuration:\n {2}PORT="abc"/)
})

t.test('--version prints the version', async (t) => {
  const io = capture()
  t.equal(await runCli(['--version'], io), 0)
  t.same(io.stdout, [productVersion()])
})
