import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Gauge, type Registry } from 'prom-client'
import { RequestTable } from './request-table.js'

/** The route label of a request no route matched: never its URL, which may name a patient. */
export const UNMATCHED_ROUTE = 'unmatched'
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])

/** Seconds: a read answers in about a millisecond, a write waits for its fsync, a print up to RENDER_TIMEOUT_MS. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

/**
 * Requests by route pattern (`routeOptions.url`), method and status, their duration by route, and
 * those in flight. The per-request cost is a few Map lookups and additions (./request-table.ts).
 */
export function instrumentRequests(fastify: FastifyInstance, registry: Registry): void {
  const table = new RequestTable(DURATION_BUCKETS)
  table.register(registry, {
    requests: 'facility_service_http_requests_total',
    duration: 'facility_service_http_request_duration_seconds',
  })
  let inFlight = 0
  new Gauge({
    name: 'facility_service_http_requests_in_flight',
    help: 'HTTP requests received and not yet answered (open live-feed streams included)',
    registers: [registry],
    collect() {
      this.set(inFlight)
    },
  })

  // One function for every response, not a closure each: 'close' comes once per response, whether
  // it was sent or the client went away first (then no onResponse comes).
  function leftFlight() {
    inFlight--
  }

  fastify.addHook('onRequest', function countInFlight(_request, reply, done) {
    inFlight++
    reply.raw.on('close', leftFlight)
    done()
  })
  fastify.addHook('onResponse', function countAnswer(request: FastifyRequest, reply: FastifyReply, done) {
    const method = METHODS.has(request.method) ? request.method : 'other'
    table.record(request.routeOptions.url ?? UNMATCHED_ROUTE, method, reply.statusCode, reply.elapsedTime / 1000)
    done()
  })
}
