import fp from 'fastify-plugin'
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client'
import type { Config } from '../config.js'
import { productVersion } from '../lib/product-files.js'
import type { AuthRefusal } from '../plugins/auth/refusals.js'
import { instrumentAdt } from './adt.js'
import { instrumentDatabase } from './database.js'
import { instrumentRequests } from './http.js'
import { createMetricsListener } from './listener.js'
import { instrumentCopies, instrumentService } from './service.js'

const LINT_FAILING_DEFAULTS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
]

declare module 'fastify' {
  interface FastifyInstance {
    /** The operators' metrics (null: METRICS_PORT unset, none kept). */
    metrics: ServiceMetrics | null
  }
}

export interface ServiceMetrics {
  registry: Registry
  /** The port the metrics listener took (null until the app is ready). */
  port: number | null
  /** A refused authentication, by why (plugins/auth). */
  authRefused(reason: AuthRefusal): void
}

/**
 * The operators' metrics (docs/METRICS.md), in the Prometheus text format on a listener of their
 * own (`port`: METRICS_PORT; METRICS_HOST, METRICS_TOKEN), never on the API's port. Registered only
 * with METRICS_PORT set (app.ts): otherwise not even the request hooks are added. One registry per
 * app, never prom-client's global one: tests build many apps in one process.
 */
export default fp<{ config: Config; port: number }>(
  async function metricsPlugin(fastify, { config, port }) {
    const registry = new Registry()
    collectDefaultMetrics({ register: registry })
    // Gauges named like counters (promtool's lint says so); their by-type siblings stay.
    for (const name of LINT_FAILING_DEFAULTS) registry.removeSingleMetric(name)
    new Gauge({
      name: 'facility_service_info',
      help: 'always 1; the version of the running service in its label',
      labelNames: ['version'],
      registers: [registry],
    })
      .labels(productVersion())
      .set(1)
    instrumentRequests(fastify, registry)
    instrumentDatabase(fastify, registry)
    instrumentAdt(fastify, registry)
    const authRefused = instrumentService(fastify, registry)
    instrumentCopies(fastify, registry, config.BACKUP_INTERVAL_SECONDS || config.BACKUP_INTERVAL_MINUTES * 60)
    const metrics: ServiceMetrics = { registry, port: null, authRefused }
    fastify.decorate('metrics', metrics)

    const listener = createMetricsListener({
      host: config.METRICS_HOST,
      port,
      token: config.METRICS_TOKEN,
      registry,
      log: fastify.log,
    })
    // Once the whole app is ready, like the ADT listener: nothing is scraped from a service that might still fail to start.
    fastify.addHook('onReady', async function listen() {
      metrics.port = await listener.start()
      fastify.log.info(
        { host: config.METRICS_HOST, port: metrics.port, token: config.METRICS_TOKEN !== '' },
        'metrics listening (GET /metrics)',
      )
    })
    fastify.addHook('onClose', async function closeListener() {
      await listener.close()
    })
  },
  {
    name: 'metrics',
    fastify: '5.x',
    dependencies: ['db', 'hl7', 'feed', 'renderer', 'backups', 'replication'],
  },
)
