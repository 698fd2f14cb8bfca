import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Counter, Gauge, Histogram, type Registry } from 'prom-client'

/** The route label of a request no route matched: never its URL, which may name a patient. */
export const UNMATCHED_ROUTE = 'unmatched'
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])

/** Seconds: a read answers in about a millisecond, a write waits for its fsync, a print up to RENDER_TIMEOUT_MS. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

type CounterChild = ReturnType<Counter<string>['labels']>
type HistogramChild = ReturnType<Histogram<string>['labels']>

interface RouteInstruments {
  duration: HistogramChild
  /** By method, then by status code. */
  counts: Map<string, Map<number, CounterChild>>
}

/**
 * Requests by route pattern (`routeOptions.url`), method and status, their duration by route, and
 * those in flight. The per-request cost is a few Map lookups, one counter increment and one
 * histogram observation: the labelled children are made once per route, method and status and kept.
 */
export function instrumentRequests(fastify: FastifyInstance, registry: Registry): void {
  const requests = new Counter({
    name: 'facility_service_http_requests_total',
    help: 'HTTP requests answered, by route pattern, method and status code',
    labelNames: ['route', 'method', 'status_code'],
    registers: [registry],
  })
  const duration = new Histogram({
    name: 'facility_service_http_request_duration_seconds',
    help: 'time from a request received to its answer sent, by route pattern',
    labelNames: ['route'],
    buckets: DURATION_BUCKETS,
    registers: [registry],
  })
  const inFlight = new Gauge({
    name: 'facility_service_http_requests_in_flight',
    help: 'HTTP requests received and not yet answered (open live-feed streams included)',
    registers: [registry],
  })
  const routes = new Map<string, RouteInstruments>()

  function instrumentsOf(route: string): RouteInstruments {
    let found = routes.get(route)
    if (found === undefined) {
      found = { duration: duration.labels(route), counts: new Map() }
      routes.set(route, found)
    }
    return found
  }

  function counterOf(route: RouteInstruments, routeName: string, method: string, status: number): CounterChild {
    let byStatus = route.counts.get(method)
    if (byStatus === undefined) {
      byStatus = new Map()
      route.counts.set(method, byStatus)
    }
    let child = byStatus.get(status)
    if (child === undefined) {
      child = requests.labels(routeName, method, String(status))
      byStatus.set(status, child)
    }
    return child
  }

  // One function for every response, not a closure each: 'close' comes once per response, whether
  // it was sent or the client went away first (then no onResponse comes).
  function leftFlight() {
    inFlight.dec()
  }

  fastify.addHook('onRequest', function countInFlight(_request, reply, done) {
    inFlight.inc()
    reply.raw.on('close', leftFlight)
    done()
  })
  fastify.addHook('onResponse', function countAnswer(request: FastifyRequest, reply: FastifyReply, done) {
    const route = request.routeOptions.url ?? UNMATCHED_ROUTE
    const method = METHODS.has(request.method) ? request.method : 'other'
    const instruments = instrumentsOf(route)
    instruments.duration.observe(reply.elapsedTime / 1000)
    counterOf(instruments, route, method, reply.statusCode).inc()
    done()
  })
}
