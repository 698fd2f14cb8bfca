import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import t from 'tap'
import { startServer as start, stopServer as stop } from './reliability/server-process.js'

t.test('first start prints one admin token; a restart does not; SIGTERM exits 0', async (t) => {
  const path = join(t.testdir(), 'server.db')
  const first = await start({ DATABASE_PATH: path })
  const token = /^ {2}(fs_\S+)$/m.exec(first.output())?.[1]
  t.ok(token, 'a token is printed')
  const health = await fetch(`${first.base}/health`)
  t.equal(health.status, 200)
  const audit = await fetch(`${first.base}/audit`, { headers: { authorization: `Bearer ${token}` } })
  t.equal(audit.status, 200, 'the printed token is an admin token')
  t.notOk(first.output().includes(`"authorization":"Bearer ${token}"`), 'the log never holds the token')
  t.equal(await stop(first), 0)

  const second = await start({ DATABASE_PATH: path })
  t.notOk(/fs_[0-9a-f]{24}_/.test(second.output()), 'no token on later starts')
  t.equal(await stop(second), 0)
})

t.test('a bad configuration stops the start with a clear message', async (t) => {
  const child = spawn(process.execPath, ['--import=tsx', 'server.ts'], {
    env: { ...process.env, PORT: 'abc', BED_POLICY: 'maybe' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  const [code] = await once(child, 'exit')
  t.equal(code, 1)
  t.match(stderr, /invalid configuration/)
  t.match(stderr, /PORT="abc"/)
  t.match(stderr, /BED_POLICY="maybe": must be one of exclusive, shared/)
})
