// The fan-out harness, a process of its own: holds many event connections to one server, sends
// writes at a steady rate, and reports how long each write took to reach each connection (one
// clock: the write's request and every delivery are timed here). Prints one JSON line.
import { request } from 'node:http'
import { io } from 'socket.io-client'

const plan = JSON.parse(process.env.FANOUT_PLAN)
const marker = new RegExp(`"bed":"${plan.run}-(\\d+)"`)
const sentAt = new Map()
const latencies = []
let deliveries = 0

function delivered(text) {
  // The marker is the bed of the write: `<run>-<n>`.
  const match = marker.exec(text)
  if (!match) return
  const started = sentAt.get(Number(match[1]))
  if (started === undefined) return
  deliveries++
  latencies.push(performance.now() - started)
}

function openSse(i) {
  return new Promise((resolve, reject) => {
    const headers = { accept: 'text/event-stream' }
    if (plan.tokens) headers.authorization = `Bearer ${plan.tokens[i % plan.tokens.length]}`
    const req = request(`${plan.url}/events${plan.query ?? ''}`, { headers, agent: false })
    req.on('response', (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream ${i}: ${res.statusCode}`))
      res.setEncoding('utf8')
      let buffer = ''
      res.on('data', (chunk) => {
        buffer += chunk
        let end = buffer.indexOf('\n\n')
        while (end >= 0) {
          delivered(buffer.slice(0, end))
          buffer = buffer.slice(end + 2)
          end = buffer.indexOf('\n\n')
        }
      })
      resolve(() => req.destroy())
    })
    req.on('error', reject)
    req.end()
  })
}

function openSocket({ listen = true } = {}) {
  return new Promise((resolve, reject) => {
    const socket = io(plan.url, { forceNew: true, reconnection: false })
    if (listen) socket.on('ward-occupants created', (record) => delivered(`"bed":"${record.bed}"`))
    socket.once('connect', () => resolve(socket))
    socket.once('connect_error', reject)
  })
}

async function openAll() {
  const closers = []
  for (let i = 0; i < plan.streams; i += 50) {
    const batch = Array.from({ length: Math.min(50, plan.streams - i) }, (_, k) =>
      plan.kind === 'socketio' ? openSocket().then((s) => () => s.close()) : openSse(i + k),
    )
    closers.push(...(await Promise.all(batch)))
  }
  return closers
}

async function writer() {
  if (plan.kind === 'socketio') {
    const socket = await openSocket({ listen: false })
    return (body) =>
      new Promise((resolve) => socket.emit('create', 'ward-occupants', body, {}, (error) => resolve(!error)))
  }
  const headers = { 'content-type': 'application/json' }
  if (plan.writeToken) headers.authorization = `Bearer ${plan.writeToken}`
  return (body) =>
    fetch(`${plan.url}/ward-occupants`, { method: 'POST', headers, body: JSON.stringify(body) }).then(
      async (res) => {
        await res.arrayBuffer()
        return res.ok
      },
      () => false,
    )
}

const closers = await openAll()
const write = await writer()
const pending = []
let failed = 0
const total = Math.round(plan.rate * plan.seconds)
const startedAt = performance.now()
const cpuBefore = process.cpuUsage()
for (let n = 0; n < total; n++) {
  // A steady rate: each write at its own moment, however long the last one took.
  const due = startedAt + (n * 1000) / plan.rate
  const wait = due - performance.now()
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
  sentAt.set(n, performance.now())
  const body = {
    encounter: `enc-${n}`,
    bed: `${plan.run}-${n}`,
    occupiedBy: 'patient',
    ...(plan.facility ? { facility: plan.facility } : {}),
  }
  pending.push(write(body).then((ok) => ok || failed++))
}
await Promise.all(pending)
const expected = (total - failed) * plan.streams
const deadline = performance.now() + 10_000
while (deliveries < expected && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
const cpu = process.cpuUsage(cpuBefore)
latencies.sort((a, b) => a - b)
const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))] ?? null
process.stdout.write(
  `${JSON.stringify({ writes: total, failed, expected, deliveries, p50: at(0.5), p99: at(0.99), max: at(1), harnessCpuSeconds: (cpu.user + cpu.system) / 1e6 })}\n`,
)
for (const close of closers) close()
process.exit(0)
