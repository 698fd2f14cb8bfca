import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { PROJECT_ROOT } from '../../lib/product-files.js'
import { ackOf, openSender } from '../hl7/client.js'
import { adt } from '../hl7/messages.js'
import { startServer, stopServer } from '../reliability/server-process.js'

/**
 * The whole chain an operator sets up (docs/METRICS.md): the server as its own process with its
 * metrics listener and a token, a real Prometheus scraping it every second with the shipped rules
 * (their `for:` set to 0s for the test), and an ADT message parked over MLLP: the alert fires.
 * Bounded by the polling limit below, not timed.
 */

const POLLS = 240
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  server.close()
  return port
}

/** The port a listener logged (`"port":N ... "msg":"<message>"`), once it has. */
async function loggedPort(output: () => string, message: string): Promise<number> {
  for (let i = 0; i < POLLS; i++) {
    const line = output()
      .split('\n')
      .find((l) => l.includes(message))
    if (line) return (JSON.parse(line) as { port: number }).port
    await sleep(50)
  }
  throw new Error(`no "${message}" in the server's log: ${output()}`)
}

function startPrometheus(dir: string, target: string, token: string, port: number): ChildProcess {
  const shipped = readFileSync(join(PROJECT_ROOT, 'examples/prometheus/facility-service.rules.yml'), 'utf8')
  writeFileSync(join(dir, 'rules.yml'), shipped.replace(/for: \w+/g, 'for: 0s'))
  writeFileSync(join(dir, 'token'), token)
  writeFileSync(
    join(dir, 'prometheus.yml'),
    [
      'global:',
      '  scrape_interval: 1s',
      '  evaluation_interval: 1s',
      'rule_files:',
      `  - ${join(dir, 'rules.yml')}`,
      'scrape_configs:',
      '  - job_name: facility-service',
      '    authorization:',
      `      credentials_file: ${join(dir, 'token')}`,
      '    static_configs:',
      `      - targets: ['${target}']`,
      '',
    ].join('\n'),
  )
  return spawn(
    'prometheus',
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { stdio: 'ignore' },
  )
}

interface Alert {
  labels: { alertname: string }
  state: string
}

async function alerts(base: string): Promise<Alert[]> {
  try {
    const res = await fetch(`${base}/api/v1/alerts`)
    return ((await res.json()) as { data: { alerts: Alert[] } }).data.alerts
  } catch {
    return [] // Prometheus not up yet
  }
}

async function targetHealth(base: string): Promise<string> {
  try {
    const res = await fetch(`${base}/api/v1/targets`)
    const body = (await res.json()) as { data: { activeTargets: { health: string }[] } }
    return body.data.activeTargets[0]?.health ?? 'unknown'
  } catch {
    return 'unknown'
  }
}

t.test('Prometheus scrapes the metrics listener and the parked-message alert fires', async (t) => {
  const dir = t.testdir()
  const token = 's'.repeat(48)
  const [metricsPort, hl7Port, prometheusPort] = [await freePort(), await freePort(), await freePort()]
  const server = await startServer({
    DATABASE_PATH: join(dir, 'ward.db'),
    METRICS_PORT: String(metricsPort),
    METRICS_TOKEN: token,
    HL7_PORT: String(hl7Port),
  })
  t.teardown(() => stopServer(server))
  t.equal(await loggedPort(server.output, 'metrics listening'), metricsPort)
  const prometheus = startPrometheus(dir, `127.0.0.1:${metricsPort}`, token, prometheusPort)
  t.teardown(async () => {
    if (prometheus.exitCode !== null) return
    prometheus.kill('SIGTERM')
    await once(prometheus, 'exit')
  })
  const base = `http://127.0.0.1:${prometheusPort}`

  let health = 'unknown'
  for (let i = 0; i < POLLS && health !== 'up'; i++) {
    health = await targetHealth(base)
    if (health !== 'up') await sleep(250)
  }
  t.equal(health, 'up', 'Prometheus scrapes the service with the token')
  t.notOk(
    (await alerts(base)).some((a) => a.labels.alertname === 'FacilityServiceAdtMessagesParked'),
    'nothing parked: no alert',
  )

  const sender = await openSender(await loggedPort(server.output, 'ADT feed listening'))
  t.teardown(() => sender.close())
  const ack = ackOf(await sender.send(adt({ event: 'A03', control: 'P1', encounter: 'NOT-ADMITTED', facility: 'A' })))
  t.match(ack.text, /^parked: /, 'an A03 for an unknown encounter is parked')

  let firing = false
  for (let i = 0; i < POLLS && !firing; i++) {
    firing = (await alerts(base)).some(
      (a) => a.labels.alertname === 'FacilityServiceAdtMessagesParked' && a.state === 'firing',
    )
    if (!firing) await sleep(250)
  }
  t.ok(firing, 'FacilityServiceAdtMessagesParked fires')
})
