// Drives a server with autocannon: a warm-up, then the measured run, from a request maker.
import autocannon from 'autocannon'

/** Runs autocannon; `current.instance` lets a request maker stop the run early. */
function run(options, current = {}) {
  return new Promise((resolve, reject) => {
    current.instance = autocannon(options, (error, result) => (error ? reject(error) : resolve(result)))
  })
}

function toRequest(r) {
  return {
    method: r.method,
    path: r.path,
    headers: r.headers ?? {},
    body: r.body === undefined ? undefined : JSON.stringify(r.body),
  }
}

/** One request with fetch, to find out whether a route exists before loading it. */
export async function probe(url, next) {
  const r = toRequest(next())
  const res = await fetch(url + r.path, { method: r.method, headers: r.headers, body: r.body })
  const text = await res.text()
  let code
  try {
    code = JSON.parse(text).code
  } catch {}
  return { status: res.status, code, body: text }
}

/**
 * Loads `url` with the requests `next()` makes: a warm-up, then the measured run. `next()` may
 * answer null when it has nothing left to send (a pool of ids used up): the run then stops early
 * (the requests still in flight repeat the last one) and its req/s counts the time it really ran.
 */
export async function load(url, next, { connections, duration, warmup, onResponse, amount, cpuSeconds }) {
  const current = {}
  let last
  const requests = [
    {
      setupRequest(request) {
        const r = next()
        if (r) last = r
        else current.instance?.stop()
        return { ...request, ...toRequest(r ?? last) }
      },
      onResponse: onResponse ? (status, body) => onResponse(status, body) : undefined,
    },
  ]
  const base = { url, connections, pipelining: 1, requests, timeout: 30 }
  if (amount !== undefined) return summarize(await run({ ...base, amount }, current))
  if (warmup > 0) await run({ ...base, duration: warmup }, current)
  const cpuBefore = cpuSeconds?.()
  const summary = summarize(await run({ ...base, duration }, current))
  // The server's own CPU time per request: far steadier than req/s on a shared machine.
  if (cpuSeconds) summary.cpuMicros = ((cpuSeconds() - cpuBefore) * 1e6) / summary.total
  return summary
}

function summarize(result) {
  const statuses = {}
  for (const [code, { count }] of Object.entries(result.statusCodeStats ?? {})) statuses[code] = Number(count)
  return {
    // Over the time the run really took (it may stop early), not the mean of whole seconds.
    rps: result.requests.total / result.duration,
    seconds: result.duration,
    total: result.requests.total,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    statuses,
  }
}
