// The live feed's fan-out benchmark (issue 13): many open streams while writes run at a steady
// rate, for the service and two anchors measured in the same run with the same harness: bare
// Fastify writing one pre-serialized frame to every stream (the limit of the stack), and FeathersJS
// v5 over Socket.io with one channel (the origin platform's own stack).
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { request } from 'node:http'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import { migrate } from '../../dist/db/migrations.js'
import { createTokenRepository } from '../../dist/db/repositories/tokens.js'
import { load } from '../load.js'
import { freePort, ROOT, startService } from '../processes.js'
import { FACILITIES, facilityName } from '../seed.js'

const PER_TOKEN = 10 // the service's default FEED_MAX_STREAMS_PER_TOKEN

function harness(plan) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'bench/feed/harness.js')], {
      env: { ...process.env, FANOUT_PLAN: JSON.stringify(plan) },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let out = ''
    child.stdout.on('data', (chunk) => {
      out += chunk
    })
    child.once('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1))) : reject(new Error(`harness exited ${code}`)),
    )
  })
}

/** An anchor server (bench/feed/*.js) as its own process, ready once it prints "listening". */
async function startAnchor(file) {
  const port = await freePort()
  const child = spawn(process.execPath, [join(ROOT, 'bench/feed', file)], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  await new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk) => String(chunk).includes('listening') && resolve())
    child.once('exit', (code) => reject(new Error(`${file} exited ${code}`)))
  })
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid,
    stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      return exited
    },
  }
}

function seedFeedDatabase(path, streams) {
  const db = new BetterSqlite3(path)
  try {
    migrate(db)
    const tokens = createTokenRepository(db)
    const make = (account, role, facility = null) =>
      tokens.create({ account, role, facility, label: 'bench feed' }).token
    const count = Math.ceil(streams / PER_TOKEN)
    return {
      writer: make('bench-feed-writer', 'write'),
      // Tokens without a facility: every stream receives every change, the anchors' load shape.
      everyone: Array.from({ length: count }, (_, i) => make(`board-${i}`, 'read')),
      // Tokens of a facility that none of the writes touch.
      elsewhere: Array.from({ length: count }, (_, i) => make(`other-${i}`, 'read', 'ward-elsewhere')),
    }
  } finally {
    db.close()
  }
}

/** CPU seconds (user + system) of a process so far, from /proc (ticks of 10 ms). */
const cpuOf = (pid) => {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return Number.NaN
  }
}

export async function runFanout({ workdir, log, streams, rates, seconds, createDuration, createWarmup }) {
  const database = join(workdir, 'feed.db')
  const tokens = seedFeedDatabase(database, streams)
  const rows = []
  const measure = async (label, server, plan, cpuSeconds) => {
    for (const rate of rates) {
      log(`  ${label}: ${streams} streams, ${rate} changes/s`)
      const cpuBefore = cpuSeconds()
      const run = `${label}-${rate}-${Date.now().toString(36)}`
      const result = await harness({ ...plan, run, url: server.url, streams, rate, seconds })
      const cpu = cpuSeconds() - cpuBefore
      rows.push({ label, rate, ...result, cpuMicrosPerDelivery: (cpu * 1e6) / Math.max(1, result.deliveries) })
    }
  }

  const bare = await startAnchor('bare-sse.js')
  try {
    await measure('limit', bare, { kind: 'sse' }, () => cpuOf(bare.pid))
  } finally {
    await bare.stop()
  }

  const service = await startService({ database, logLevel: 'warn' })
  let peakRss
  try {
    await measure(
      'service',
      service,
      // Occupant events only, as the anchors send: the service's produced notifications aside.
      {
        kind: 'sse',
        query: '?resources=ward-occupants',
        tokens: tokens.everyone,
        writeToken: tokens.writer,
        facility: facilityName(0),
      },
      service.cpuSeconds,
    )
    peakRss = service.peakRss()
  } finally {
    await service.stop()
  }

  const peer = await startAnchor('feathers-server.js')
  try {
    await measure('peer', peer, { kind: 'socketio' }, () => cpuOf(peer.pid))
  } finally {
    await peer.stop()
  }

  // Writes with streams open that receive none of them: the cost of merely holding the streams.
  const creates = await createThroughput({ database, tokens, streams, createDuration, createWarmup, log })
  return { streams, seconds, rows, peakRss, creates }
}

async function createThroughput({ database, tokens, streams, createDuration, createWarmup, log }) {
  const service = await startService({ database, logLevel: 'warn' })
  let n = 0
  const next = () => ({
    method: 'POST',
    path: '/ward-occupants',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${tokens.writer}` },
    body: { encounter: `enc-c${n}`, bed: `c-${n++}`, occupiedBy: 'patient', facility: facilityName(n % FACILITIES) },
  })
  const options = { connections: 50, duration: createDuration, warmup: createWarmup, cpuSeconds: service.cpuSeconds }
  try {
    log('  creates without streams')
    const without = await load(service.url, next, options)
    log(`  creates with ${streams} streams of another facility open`)
    const closers = await openQuiet(service.url, tokens.elsewhere, streams)
    const withStreams = await load(service.url, next, options)
    for (const close of closers) close()
    log('  creates without streams, again (the machine is shared)')
    const again = await load(service.url, next, options)
    return {
      without: (without.rps + again.rps) / 2,
      withStreams: withStreams.rps,
      withoutRuns: [without.rps, again.rps],
    }
  } finally {
    await service.stop()
  }
}

/** Opens streams that nothing written will reach; answers their closers. */
async function openQuiet(url, tokens, count) {
  const open = (i) =>
    new Promise((resolve, reject) => {
      const req = request(`${url}/events`, {
        headers: { accept: 'text/event-stream', authorization: `Bearer ${tokens[i % tokens.length]}` },
        agent: false,
      })
      req.on('response', (res) => {
        if (res.statusCode !== 200) return reject(new Error(`stream ${res.statusCode}`))
        res.resume()
        resolve(() => req.destroy())
      })
      req.on('error', reject)
      req.end()
    })
  const closers = []
  for (let i = 0; i < count; i += 50)
    closers.push(...(await Promise.all(Array.from({ length: Math.min(50, count - i) }, (_, k) => open(i + k)))))
  return closers
}
