// Child processes of the benchmark: the service (dist/server.js), the bare reference server and the
// Feathers peer (bench/peer/server.js), each started with `node` like `npm start` does, on the
// Node that runs the bench (process.execPath), plus their memory watch.
import { spawn } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { startCommand } from '../scripts/start-command.mjs'

export const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** Node's flags and the environment of `npm start` (package.json): the service is measured as it is started. */
const { flags: START_FLAGS, env: START_ENV } = startCommand()

/** A port nobody listens on right now (the server is told to use it). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address()
      probe.close(() => resolve(port))
    })
  })
}

/** Reads VmRSS and VmHWM (the peak resident set, kept by the kernel) of a process, in bytes. */
function memoryOf(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const kb = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') }
  } catch {
    return null
  }
}

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat (clock ticks of 10 ms). */
function cpuSecondsOf(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return Number.NaN
  }
}

/**
 * Nanoseconds on a CPU, summed over the threads a process has now (/proc/<pid>/task/<tid>/schedstat):
 * finer than /proc/<pid>/stat's 10 ms ticks, for measures of a second. A thread that ended takes
 * its time with it, so compare only over spans in which the process's threads stay (no renders).
 */
export function cpuNanosOf(pid) {
  try {
    let total = 0
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0])
    }
    return total
  } catch {
    return Number.NaN
  }
}

function startChild(label, args, env, { echo = false, cwd = ROOT } = {}) {
  const child = spawn(process.execPath, args, {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const tail = []
  const keep = (chunk) => {
    if (echo) process.stderr.write(chunk)
    tail.push(...chunk.toString().split('\n').filter(Boolean))
    if (tail.length > 40) tail.splice(0, tail.length - 40)
  }
  child.stdout.on('data', keep)
  child.stderr.on('data', keep)
  let peak = 0
  function sample() {
    const memory = memoryOf(child.pid)
    if (memory) peak = Math.max(peak, memory.rss, memory.hwm)
  }
  const watch = setInterval(sample, 200)
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  exited.then(() => clearInterval(watch))
  return {
    label,
    child,
    exited,
    output: () => tail.join('\n'),
    cpuSeconds: () => cpuSecondsOf(child.pid),
    cpuNanos: () => cpuNanosOf(child.pid),
    /** The highest resident set seen so far (VmHWM is the kernel's own peak, so no spike is missed). */
    peakRss() {
      if (child.exitCode === null) sample()
      return peak
    },
    /** Its peak resident set so far, read now (VmHWM). */
    hwmNow: () => memoryOf(child.pid)?.hwm ?? 0,
    /** Its resident set now (VmRSS). */
    rssNow: () => memoryOf(child.pid)?.rss ?? 0,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return exited
      sample()
      child.kill('SIGTERM')
      const done = await Promise.race([exited, sleep(15_000).then(() => null)])
      if (done) return done
      child.kill('SIGKILL')
      return exited
    },
  }
}

async function waitUntil(ready, proc, what) {
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    if (proc.child.exitCode !== null) throw new Error(`${what} exited at start:\n${proc.output()}`)
    if (await ready().catch(() => false)) return
    await sleep(100)
  }
  throw new Error(`${what} did not become ready within 60 s:\n${proc.output()}`)
}

/**
 * Starts the compiled service on its own database and a free port, with the rate limit off and
 * Node's flags of `npm start`.
 * `cwd`: the tree whose dist/ runs (bench/ab.js starts an older build from a worktree of its own).
 * LOG_LEVEL defaults to warn: at info, pino writes two lines per request, which the bench would
 * then measure as much as the service (production may well run at warn; see docs/PERFORMANCE.md).
 */
export async function startService({ database, logLevel, nodeArgs = [], env = {}, echo = false, cwd = ROOT }) {
  const port = await freePort()
  const proc = startChild(
    'service',
    [...START_FLAGS, ...nodeArgs, 'dist/server.js'],
    {
      ...START_ENV,
      DATABASE_PATH: database,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: logLevel,
      RATE_LIMIT_MAX: '0',
      ...env,
    },
    { echo, cwd },
  )
  const url = `http://127.0.0.1:${port}`
  await waitUntil(async () => (await fetch(`${url}/health`)).ok, proc, 'the service')
  return { ...proc, url }
}

/**
 * The service twice in one process (bench/metrics-pair-server.js): `off` on `database` without
 * metrics, `on` on `databaseOn` with METRICS_PORT set; the metrics' cost is read from their turns.
 */
export async function startMetricsPair({ database, databaseOn, logLevel }) {
  const [port, portOn, metricsPort] = [await freePort(), await freePort(), await freePort()]
  const proc = startChild('metrics pair', [...START_FLAGS, 'bench/metrics-pair-server.js'], {
    ...START_ENV,
    DATABASE_PATH: database,
    DATABASE_PATH_ON: databaseOn,
    PORT: String(port),
    PORT_ON: String(portOn),
    METRICS_PORT: String(metricsPort),
    HOST: '127.0.0.1',
    LOG_LEVEL: logLevel,
    RATE_LIMIT_MAX: '0',
  })
  const urls = { off: `http://127.0.0.1:${port}`, on: `http://127.0.0.1:${portOn}` }
  await waitUntil(async () => (await fetch(`${urls.on}/health`)).ok, proc, 'the metrics pair')
  return { ...proc, urls, metricsUrl: `http://127.0.0.1:${metricsPort}/metrics` }
}

export async function startBare() {
  const port = await freePort()
  const proc = startChild('bare', ['bench/bare-server.js'], { PORT: String(port) })
  const url = `http://127.0.0.1:${port}`
  await waitUntil(async () => (await fetch(`${url}/bare`)).ok, proc, 'the bare server')
  return { ...proc, url }
}

/** The Feathers peer of the CRUD scenarios (bench/peer/server.js) on its own seeded file. */
export async function startPeer({ database, echo = false }) {
  const port = await freePort()
  const proc = startChild('peer', ['bench/peer/server.js'], { DATABASE_PATH: database, PORT: String(port) }, { echo })
  const url = `http://127.0.0.1:${port}`
  // Without a token every request is a 401: an answer at all means it listens.
  await waitUntil(async () => (await fetch(`${url}/ward-occupants`)).status === 401, proc, 'the Feathers peer')
  return { ...proc, url }
}

/** The database limit of the CRUD scenarios (bench/limit/server.js) on its own copy of the seeded file. */
export async function startLimit({ database, tokens, nodeArgs = [], echo = false }) {
  const port = await freePort()
  const proc = startChild(
    'limit',
    [...nodeArgs, 'bench/limit/server.js'],
    { DATABASE_PATH: database, PORT: String(port), LIMIT_TOKENS: tokens },
    { echo },
  )
  const url = `http://127.0.0.1:${port}`
  await waitUntil(async () => (await fetch(`${url}/health`)).ok, proc, 'the database limit')
  return { ...proc, url }
}
