import { statSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { buildApp } from '../../app.js'
import { defaultConfig } from '../../config.js'
import { openDatabase } from '../../db/connection.js'
import { createTokenRepository } from '../../db/repositories/tokens.js'
import { type ServerProcess, startServer, stopServer } from './server-process.js'

/** Replica settings: a replica that cannot be reached, secrets in the log, and settings refused at start. */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A local port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

interface Replication {
  running: boolean
  failing?: { since: number; message: string }
}

/** An admin token, made on the server's database while it runs: /health's details are an admin's. */
function adminToken(path: string): string {
  const db = openDatabase(path)
  const { token } = createTokenRepository(db).create({ account: 'admin-1', role: 'admin' })
  db.close()
  return token
}

/** Polls /health (answering 200 all along) until replication is failing; returns what it says. */
async function failingHealth(t: Test, server: ServerProcess, admin: string): Promise<Replication> {
  for (;;) {
    const res = await fetch(`${server.base}/health`, { headers: { authorization: `Bearer ${admin}` } })
    const body = (await res.json()) as { replication: Replication }
    if (res.status !== 200) t.fail(`health answered ${res.status}`)
    if (body.replication.failing) return body.replication
    await sleep(50)
  }
}

// With the characters a URL must carry percent-encoded (the old mask stopped at a `/`).
const PASSWORD = 'Pw/of@the:standby%7731'
const ACCESS_KEY = 'AKIASTANDBYTEST0001'
const SECRET_KEY = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYSTANDBYKEY'

t.test('an unreachable replica: /health still 200 with replication.failing; no secret reaches the log', async (t) => {
  const dir = t.testdir({ 's3.yml': '' })
  const port = await closedPort()
  writeFileSync(join(dir, 's3.yml'), `endpoint: http://127.0.0.1:${port}\nforce-path-style: true\n`)
  const [sftp, s3] = await Promise.all([
    startServer({
      DATABASE_PATH: join(dir, 'sftp', 'ward.db'),
      REPLICA_URL: `sftp://repl:${encodeURIComponent(PASSWORD)}@127.0.0.1:${port}/replicas/ward`,
    }),
    startServer({
      DATABASE_PATH: join(dir, 's3', 'ward.db'),
      REPLICA_URL: 's3://ward-replicas/ward',
      REPLICA_CONFIG: join(dir, 's3.yml'),
      LITESTREAM_ACCESS_KEY_ID: ACCESS_KEY,
      LITESTREAM_SECRET_ACCESS_KEY: SECRET_KEY,
      LOG_LEVEL: 'debug',
    }),
  ])
  t.teardown(() => Promise.all([stopServer(sftp, 'SIGKILL'), stopServer(s3, 'SIGKILL')]))
  for (const [server, name] of [
    [sftp, 'sftp'],
    [s3, 's3'],
  ] as const) {
    const replication = await failingHealth(t, server, adminToken(join(dir, name, 'ward.db')))
    t.equal(replication.running, true, 'Litestream runs, and retries')
    t.match(replication.failing?.message, /connection refused/, 'failing says why')
  }
  t.match(
    sftp.output(),
    /replicating .*ward\.db to sftp:\/\/repl:\*\*\*@127\.0\.0\.1/,
    'the URL is logged, password hidden',
  )
  t.equal(
    statSync(join(dir, 'sftp', 'ward.db.litestream.yml')).mode & 0o777,
    0o600,
    "Litestream's settings are private",
  )
  await Promise.all([stopServer(sftp), stopServer(s3)])
  for (const secret of [PASSWORD, encodeURIComponent(PASSWORD), ACCESS_KEY, SECRET_KEY])
    t.notOk(sftp.output().includes(secret) || s3.output().includes(secret), `not in the logs: ${secret.slice(0, 4)}…`)
})

t.test('replica settings found wrong stop the start with a clear message', async (t) => {
  const dir = t.testdir({
    'url.yml': 'url: s3://elsewhere/x\n',
    'bad.yml': 'sync-interval: soon\n',
    'tabs.yml': 'key-path:\t/etc/key\n',
  })
  const attempts: [Record<string, string>, RegExp][] = [
    [{ LITESTREAM_PATH: join(dir, 'nothing') }, /LITESTREAM_PATH: .*nothing is not an executable file/],
    [{ REPLICA_CONFIG: join(dir, 'missing.yml') }, /REPLICA_CONFIG: cannot read .*missing\.yml \(ENOENT\)/],
    [{ REPLICA_CONFIG: join(dir, 'url.yml') }, /"url" comes from REPLICA_URL; remove it here/],
    [{ REPLICA_CONFIG: join(dir, 'tabs.yml') }, /tabs are not allowed/],
    [{ REPLICA_CONFIG: join(dir, 'bad.yml') }, /Litestream refuses the replica settings .*cannot unmarshal .*soon/],
  ]
  for (const [settings, message] of attempts) {
    const config = defaultConfig({ DATABASE_PATH: join(dir, 'ward.db'), REPLICA_URL: join(dir, 'r'), ...settings })
    await t.rejects(buildApp({ ...config, LOG_LEVEL: 'silent' }), { name: 'ConfigError', message }, message.source)
  }
  // The server itself: exit 1 with the message, as for any bad setting.
  const failed = await startServer({
    DATABASE_PATH: join(dir, 'ward.db'),
    REPLICA_URL: join(dir, 'r'),
    REPLICA_CONFIG: join(dir, 'bad.yml'),
  }).catch((error: Error) => error.message)
  t.match(failed, /server exited with 1: facility-service: Litestream refuses the replica settings/)
})
