import type { Server } from 'node:http'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyHttpOptions, type FastifyInstance, type FastifyServerOptions } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from './config.js'
import feedPlugin from './feed/index.js'
import fhirApi, { fhirPublic, sendRoutingError } from './fhir/index.js'
import { createFhirRegistry } from './fhir/registry.js'
import hl7Plugin from './hl7/index.js'
import { requestSerializer } from './http/log-serializers.js'
import { productVersion } from './lib/product-files.js'
import type {} from './metrics/index.js'
import authPlugin from './plugins/auth/index.js'
import providerPlugin from './plugins/auth/provider.js'
import backupsPlugin from './plugins/backups.js'
import closeKeepAlive from './plugins/close-keep-alive.js'
import dbPlugin from './plugins/db.js'
import errorsPlugin, { formatSchemaErrors, handleClientError } from './plugins/errors.js'
import eventsPlugin from './plugins/events.js'
import idempotencyPlugin from './plugins/idempotency.js'
import jsonBody from './plugins/json-body.js'
import lingeringClose from './plugins/lingering-close.js'
import notificationProducer from './plugins/notification-producer.js'
import openapiPlugin from './plugins/openapi.js'
import queryStringCheck, { parseQueryString } from './plugins/query-string.js'
import rateLimitPlugin from './plugins/rate-limit.js'
import readAuditPlugin from './plugins/read-audit.js'
import replicationPlugin from './plugins/replication.js'
import retentionPlugin from './plugins/retention.js'
import securityHeaders from './plugins/security-headers.js'
import rendererPlugin from './render/index.js'
import auditRoutes from './routes/audit/index.js'
import bedRoutes from './routes/beds/index.js'
import boardRoutes from './routes/board/index.js'
import eventRoutes from './routes/events/index.js'
import formTemplateRoutes from './routes/form-templates/index.js'
import healthRoutes from './routes/health/index.js'
import hl7MessageRoutes from './routes/hl7-messages/index.js'
import notificationRoutes from './routes/notifications/index.js'
import wardOccupantRoutes from './routes/ward-occupants/index.js'

declare module 'fastify' {
  interface FastifyInstance {
    config: Config
  }
}

/**
 * The Fastify options the service depends on: how query strings and bodies are read and
 * validated. Bodies are never coerced and unknown properties are errors, not silently dropped.
 */
export function serverOptions(config: Config): FastifyServerOptions {
  return {
    bodyLimit: config.BODY_LIMIT,
    trustProxy: config.TRUST_PROXY,
    routerOptions: { querystringParser: parseQueryString },
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: true } },
    schemaErrorFormatter: formatSchemaErrors,
    frameworkErrors: sendRoutingError,
    clientErrorHandler: handleClientError,
  }
}

/**
 * Options for a listening server (inject has no connection to time out). The request timeout is
 * also given to Node's own server options: only there does Node derive its headers timeout from it
 * (the smaller of 60 s and it), and Node cuts a request whose headers have arrived but whose body
 * trickles in only once that headers timeout has passed too. Node checks the timeouts every
 * `connectionsCheckingInterval` (30 s by default, so a 30 s limit could take a minute to act);
 * checking at least every second keeps the limit close to what is configured.
 */
export function listenOptions(config: Config): FastifyHttpOptions<Server> {
  const timeout = config.REQUEST_TIMEOUT_MS
  return {
    requestTimeout: timeout,
    http: {
      requestTimeout: timeout,
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(timeout / 2))),
    },
    return503OnClosing: true,
  }
}

/**
 * Structured logs with request ids; credentials are never written, and neither are query values or
 * bodies, which name patients (plugins/log-serializers.ts), unless LOG_QUERY_VALUES is set.
 */
export function loggerOptions(config: Config): FastifyServerOptions['logger'] {
  return {
    level: config.LOG_LEVEL,
    serializers: { req: requestSerializer(config.LOG_QUERY_VALUES, parseQueryString) },
    redact: { paths: ['req.headers.authorization', 'req.headers.cookie'], censor: '[redacted]' },
  }
}

/**
 * The metrics plugin is loaded only with METRICS_PORT set: prom-client and the metrics listener's
 * modules (its ESM import of node:http loads Node's fetch implementation) hold about 3 MB that a
 * service without metrics never uses. Without it, `metrics` is null.
 */
async function registerMetrics(fastify: FastifyInstance, config: Config): Promise<void> {
  if (config.METRICS_PORT === undefined) {
    fastify.decorate('metrics', null)
    return
  }
  const { default: metricsPlugin } = await import('./metrics/index.js')
  await fastify.register(metricsPlugin, { config, port: config.METRICS_PORT })
}

/** The whole service as one plugin. It never listens: server.ts does, tests inject. */
export default async function app(fastify: FastifyInstance, opts: { config: Config }) {
  fastify.decorate('config', opts.config)
  // Only JSON bodies are accepted: without this, text/plain would reach validation as a string.
  fastify.removeContentTypeParser(['text/plain'])

  await fastify.register(errorsPlugin)
  await fastify.register(queryStringCheck)
  await fastify.register(jsonBody)
  await fastify.register(lingeringClose)
  await fastify.register(closeKeepAlive)
  await fastify.register(securityHeaders, {
    signInOrigin: opts.config.OIDC_BOARD_CLIENT_ID === '' ? undefined : new URL(opts.config.OIDC_ISSUER).origin,
  })
  await fastify.register(eventsPlugin)
  // Before the database, so that it closes after it: Litestream's final sync comes last.
  await fastify.register(replicationPlugin, {
    url: opts.config.REPLICA_URL,
    configFile: opts.config.REPLICA_CONFIG,
    litestreamPath: opts.config.LITESTREAM_PATH,
    databasePath: opts.config.DATABASE_PATH,
  })
  await fastify.register(dbPlugin, {
    path: opts.config.DATABASE_PATH,
    bedPolicy: opts.config.BED_POLICY,
    bedExpectedHours: opts.config.BED_EXPECTED_HOURS,
    busyTimeoutMs: opts.config.DATABASE_BUSY_TIMEOUT_MS,
    durableSync: opts.config.DURABLE_SYNC,
    pageCacheBytes: opts.config.NOTIFICATION_PAGE_CACHE_BYTES,
    occupantPageCacheBytes: opts.config.WARD_OCCUPANT_PAGE_CACHE_BYTES,
    // With a replica Litestream checkpoints, and the server only while Litestream is down, as before.
    checkpointWorker: opts.config.REPLICA_URL === '',
    cacheBytes: opts.config.DATABASE_CACHE_BYTES,
  })
  await fastify.register(retentionPlugin)
  await fastify.register(backupsPlugin, {
    dir: opts.config.BACKUP_DIR === '' ? null : opts.config.BACKUP_DIR,
    intervalMs: (opts.config.BACKUP_INTERVAL_SECONDS || opts.config.BACKUP_INTERVAL_MINUTES * 60) * 1000,
    keep: opts.config.BACKUP_KEEP,
  })
  await fastify.register(notificationProducer)
  await fastify.register(providerPlugin, { config: opts.config })
  await fastify.register(feedPlugin, {
    retentionHours: opts.config.FEED_RETENTION_HOURS,
    heartbeatMs: opts.config.FEED_HEARTBEAT_MS,
    pollMs: opts.config.FEED_POLL_MS,
    maxStreams: opts.config.FEED_MAX_STREAMS,
    maxStreamsPerToken: opts.config.FEED_MAX_STREAMS_PER_TOKEN,
    bufferBytes: opts.config.FEED_BUFFER_BYTES,
  })
  await fastify.register(hl7Plugin, { config: opts.config })
  await fastify.register(rendererPlugin, {
    timeoutMs: opts.config.RENDER_TIMEOUT_MS,
    memoryMb: opts.config.RENDER_MEMORY_MB,
    maxOutputBytes: opts.config.RENDER_MAX_OUTPUT_BYTES,
    workerIdleMs: opts.config.RENDER_WORKER_IDLE_SECONDS * 1000,
    compilerIdleMs: opts.config.RENDER_COMPILER_IDLE_SECONDS * 1000,
    cacheBytes: opts.config.RENDER_CACHE_BYTES,
    workers: opts.config.RENDER_WORKERS,
    queueMax: opts.config.RENDER_QUEUE_MAX,
  })
  // Before any route, so that its request hooks see every one.
  await registerMetrics(fastify, opts.config)
  await fastify.register(openapiPlugin, { version: productVersion() })
  await fastify.register(healthRoutes)
  await fastify.register(boardRoutes)
  // The FHIR endpoint (docs/FHIR.md): its CapabilityStatement needs no token, the rest does.
  const fhirRegistry = createFhirRegistry()
  await fastify.register(fhirPublic, { prefix: '/fhir', registry: fhirRegistry })

  await fastify.register(async function api(scope) {
    await scope.register(authPlugin, {
      failureLimit: opts.config.AUTH_FAILURE_LIMIT,
      failureWindowMs: opts.config.AUTH_FAILURE_WINDOW_MS,
      peekTicket: (ticket) => fastify.feed.peekTicket(ticket),
      onRefused: (reason) => fastify.metrics?.authRefused(reason),
    })
    await scope.register(rateLimitPlugin, {
      max: opts.config.RATE_LIMIT_MAX,
      windowMs: opts.config.RATE_LIMIT_WINDOW_MS,
    })
    await scope.register(readAuditPlugin, {
      enabled: opts.config.AUDIT_READS,
      retentionDays: opts.config.AUDIT_READS_RETENTION_DAYS,
    })
    await scope.register(idempotencyPlugin, { ttlHours: opts.config.IDEMPOTENCY_KEY_TTL_HOURS })
    await scope.register(wardOccupantRoutes)
    await scope.register(bedRoutes)
    await scope.register(notificationRoutes)
    await scope.register(formTemplateRoutes)
    await scope.register(auditRoutes)
    await scope.register(hl7MessageRoutes)
    await scope.register(eventRoutes)
    await scope.register(fhirApi, { prefix: '/fhir', registry: fhirRegistry })
  })
}

/** Builds a ready-to-use instance; extra Fastify options (logger, timeouts) come from the caller. */
export async function buildApp(config: Config, extra: FastifyHttpOptions<Server> = {}) {
  const fastify = Fastify({ ...serverOptions(config), ...extra }).withTypeProvider<TypeBoxTypeProvider>()
  // Registered without encapsulation so the caller sees its decorators (db, tokens, config).
  await fastify.register(fp(app), { config })
  await fastify.ready()
  return fastify
}
