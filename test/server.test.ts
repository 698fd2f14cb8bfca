import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { BOOTSTRAP_TOKEN_FILE } from '../start-server.js'
import { seedWard } from './drill/seed.js'
import { startServer as start, stopServer as stop } from './reliability/server-process.js'
import { driveWrites, newWriteRecord } from './reliability/ward-writes.js'

t.test('a first start without a terminal leaves one admin token in a private file, never in the log', async (t) => {
  const dir = t.testdir()
  const path = join(dir, 'server.db')
  const file = join(dir, BOOTSTRAP_TOKEN_FILE)
  writeFileSync(file, 'fs_left_from_an_earlier_database\n')
  const first = await start({ DATABASE_PATH: path })
  const token = readFileSync(file, 'utf8').trim()
  t.match(token, /^fs_[0-9a-f]{24}_[A-Za-z0-9_-]{43}$/, 'a new token replaced the stale file')
  t.equal(statSync(file).mode & 0o777, 0o600, 'readable and writable by the service user only')
  const health = await fetch(`${first.base}/health`)
  t.equal(health.status, 200)
  const audit = await fetch(`${first.base}/audit`, { headers: { authorization: `Bearer ${token}` } })
  t.equal(audit.status, 200, 'the token is an admin token')
  // The secret is what must not leak: checked whole and by every 12 characters in a row of it (the
  // id is public: `token list` prints it).
  const secret = /^fs_[0-9a-f]{24}_(.+)$/.exec(token)?.[1] ?? ''
  t.equal(secret.length, 43, 'the secret part of the token')
  const output = first.output()
  const windows = Array.from({ length: secret.length - 11 }, (_, i) => secret.slice(i, i + 12))
  t.notOk(output.includes(secret), 'neither stdout nor stderr (the journal) holds the secret')
  t.same(
    windows.filter((window) => output.includes(window)),
    [],
    'nor any 12 characters in a row of it',
  )
  t.match(first.output(), new RegExp(`admin token was written to ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`))
  t.equal(await stop(first), 0)

  rmSync(file)
  const second = await start({ DATABASE_PATH: path })
  t.notOk(/fs_[0-9a-f]{24}_/.test(second.output()), 'no token on later starts')
  t.notOk(existsSync(file), 'and no file')
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

t.test(
  'SIGTERM while keep-alive clients have writes in flight: they are answered, and the server exits 0',
  async (t) => {
    const path = join(t.testdir(), 'server.db')
    const token = seedWard(path, 0)
    for (let round = 0; round < 3; round++) {
      const server = await start({ DATABASE_PATH: path })
      const record = newWriteRecord()
      const writing = driveWrites(server.base, token, { writers: 4, prefix: `g${round}` }, record)
      while (record.admitted.size < 50 && record.unexpected.length === 0) await new Promise((r) => setTimeout(r, 5))
      const stopping = stop(server)
      record.stop = true
      await writing
      // Without Connection: close on the last answers, the close waited for those connections
      // until the grace period ended the process with exit code 1.
      t.equal(await stopping, 0, `round ${round}: exit 0 with ${record.admitted.size} writes acknowledged`)
      t.notMatch(server.output(), /killed by timeout/)
    }
  },
)
