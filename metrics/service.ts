import type { FastifyInstance } from 'fastify'
import { Counter, Gauge, type Registry } from 'prom-client'
import { AUTH_REFUSALS, type AuthRefusal } from '../plugins/auth/refusals.js'

/** A counter read from a count kept elsewhere (the hub's, the renderer's): set to it at each scrape. */
function countedElsewhere(counter: Counter<string>, counts: Record<string, number | undefined>): void {
  counter.reset()
  for (const [label, count] of Object.entries(counts)) counter.labels(label).inc(count ?? 0)
}

/** The live feed's streams, the print workers, and the refused authentications (told by the auth plugin). */
export function instrumentService(fastify: FastifyInstance, registry: Registry): (reason: AuthRefusal) => void {
  const registers = [registry]
  new Gauge({
    name: 'facility_service_feed_streams_open',
    help: 'live-feed streams (GET /events/stream) open now',
    registers,
    collect() {
      this.set(fastify.feed.hub.size)
    },
  })
  new Counter({
    name: 'facility_service_feed_events_delivered_total',
    help: 'events written to live-feed streams (one per stream that may see the event)',
    registers,
    collect() {
      this.reset()
      this.inc(fastify.feed.hub.counts.delivered)
    },
  })
  new Counter({
    name: 'facility_service_feed_slow_readers_cut_total',
    help: 'live-feed streams cut because their client read slower than the ward changed (FEED_BUFFER_BYTES)',
    registers,
    collect() {
      this.reset()
      this.inc(fastify.feed.hub.counts.cut)
    },
  })
  new Gauge({
    name: 'facility_service_render_queue_length',
    help: 'prints waiting for a render worker',
    registers,
    collect() {
      this.set(fastify.renderer.stats().waiting)
    },
  })
  new Gauge({
    name: 'facility_service_render_workers',
    help: 'render and compile worker threads alive now',
    registers,
    collect() {
      this.set(fastify.renderer.workers())
    },
  })
  new Counter({
    name: 'facility_service_render_failures_total',
    help: 'prints that failed, by error code (RENDER_TIMEOUT, RENDER_MEMORY_LIMIT ...; other: not a layout error)',
    labelNames: ['code'],
    registers,
    collect() {
      countedElsewhere(this, fastify.renderer.stats().failures)
    },
  })
  new Counter({
    name: 'facility_service_render_refusals_total',
    help: "prints never rendered, by reason (busy: the facility's places in the print queue were full, answered 503; cancelled: the client hung up while the print waited)",
    labelNames: ['reason'],
    registers,
    collect() {
      countedElsewhere(this, fastify.renderer.stats().refused)
    },
  })
  const refusals = new Counter({
    name: 'facility_service_auth_failures_total',
    help: 'refused authentications, by reason (missing, malformed, unknown, expired, revoked, provider_token, ticket, blocked, claim_refused, keys_unavailable, throttled)',
    labelNames: ['reason'],
    registers,
  })
  // Every reason shown from the start at 0: a rate over a series that appears late misses its first failures.
  const byReason = new Map(AUTH_REFUSALS.map((reason) => [reason, refusals.labels(reason)]))
  for (const child of byReason.values()) child.inc(0)
  return function authRefused(reason) {
    byReason.get(reason)?.inc()
  }
}

/** Scheduled backups and Litestream, each only where it is set up. */
export function instrumentCopies(fastify: FastifyInstance, registry: Registry, backupIntervalSeconds: number): void {
  const registers = [registry]
  if (fastify.backups.status() !== null) {
    new Gauge({
      name: 'facility_service_backup_interval_seconds',
      help: 'the interval of scheduled backups (BACKUP_INTERVAL_MINUTES)',
      registers,
    }).set(backupIntervalSeconds)
    new Gauge({
      name: 'facility_service_backup_age_seconds',
      help: 'age of the newest good scheduled backup (absent before the first)',
      registers,
      collect() {
        this.reset()
        const last = fastify.backups.status()?.last
        if (last) this.set((Date.now() - last.at) / 1000)
      },
    })
    new Gauge({
      name: 'facility_service_backup_last_success',
      help: "1: the last scheduled backup succeeded (or none was due yet); 0: it failed (/health's backups says why)",
      registers,
      collect() {
        this.set(fastify.backups.status()?.failing ? 0 : 1)
      },
    })
  }
  if (fastify.replication.status() === null) return
  new Gauge({
    name: 'facility_service_replication_lag_seconds',
    help: 'how long the oldest commit not yet on the replica has waited (0: the replica has every commit)',
    registers,
    collect() {
      this.set((fastify.replication.status()?.lagMs ?? 0) / 1000)
    },
  })
  new Gauge({
    name: 'facility_service_replication_up',
    help: '1 while Litestream runs and ships without error, else 0',
    registers,
    collect() {
      const status = fastify.replication.status()
      this.set(status?.running && status.failing === null ? 1 : 0)
    },
  })
  new Counter({
    name: 'facility_service_replication_restarts_total',
    help: 'how often Litestream was started again after it ended by itself',
    registers,
    collect() {
      this.reset()
      this.inc(fastify.replication.status()?.restarts ?? 0)
    },
  })
}
