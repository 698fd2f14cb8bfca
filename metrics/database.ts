import { type StatsFs, statfsSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { Counter, Gauge, Histogram, type Registry } from 'prom-client'

/** A file's size, or 0 while it does not exist (the WAL between a checkpoint that truncated it and the next commit). */
function sizeOf(path: string): number {
  try {
    return statSync(path).size
  } catch {
    return 0
  }
}

/** The database's file system; null when it cannot be read now (the scrape still answers the rest). */
function diskOf(file: string): StatsFs | null {
  try {
    return statfsSync(dirname(file))
  } catch {
    return null
  }
}

/** The database file, or null for an in-memory database (nothing on disk to watch). */
function databaseFile(path: string): string | null {
  return path === ':memory:' || path.startsWith('file:') ? null : path
}

/**
 * The write queue (writes waiting, writes per batch, the time from BEGIN until the batch is on
 * disk), the files' sizes, the free space of their disk and how far checkpoints are behind.
 */
export function instrumentDatabase(fastify: FastifyInstance, registry: Registry): void {
  const registers = [registry]
  new Gauge({
    name: 'facility_service_write_queue_depth',
    help: 'writes waiting for the next group commit',
    registers,
    collect() {
      this.set(fastify.writes.depth)
    },
  })
  const batchWrites = new Histogram({
    name: 'facility_service_write_batch_writes',
    help: 'writes committed together in one transaction (group commit)',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
    registers,
  })
  const commitSeconds = new Histogram({
    name: 'facility_service_write_commit_duration_seconds',
    help: 'time from BEGIN of a batch until it is durable (its fsync returned): what each of its writes waits, besides the sync of the batch before for a write that came while that one ran',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers,
  })
  fastify.writes.onBatch(function observeBatch(batch) {
    batchWrites.observe(batch.writes)
    commitSeconds.observe(batch.seconds)
  })

  const file = databaseFile(fastify.config.DATABASE_PATH)
  if (file === null) return
  new Gauge({
    name: 'facility_service_database_size_bytes',
    help: 'size of the database file',
    registers,
    collect() {
      this.set(sizeOf(file))
    },
  })
  new Gauge({
    name: 'facility_service_wal_size_bytes',
    help: 'size of the write-ahead log (commits not yet copied back by a checkpoint, and room kept for more)',
    registers,
    collect() {
      this.set(sizeOf(`${file}-wal`))
    },
  })
  new Gauge({
    name: 'facility_service_disk_free_bytes',
    help: "free space the service's user may use on the database's file system",
    registers,
    collect() {
      const stats = diskOf(file)
      if (stats) this.set(stats.bavail * stats.bsize)
    },
  })
  new Gauge({
    name: 'facility_service_disk_size_bytes',
    help: "size of the database's file system",
    registers,
    collect() {
      const stats = diskOf(file)
      if (stats) this.set(stats.blocks * stats.bsize)
    },
  })
  instrumentCheckpoints(fastify, registry)
}

/** Only with the checkpoint worker (no replica: Litestream checkpoints then, and says nothing of it). */
function instrumentCheckpoints(fastify: FastifyInstance, registry: Registry): void {
  const checkpoints = fastify.checkpoints
  if (checkpoints === null) return
  const lag = new Gauge({
    name: 'facility_service_wal_checkpoint_lag_frames',
    help: 'WAL frames the last checkpoint could not copy back into the database file (readers held them)',
    registers: [registry],
  })
  const made = new Counter({
    name: 'facility_service_wal_checkpoints_total',
    help: 'checkpoints made by the checkpoint worker',
    registers: [registry],
  })
  checkpoints.onCheckpoint(function observeCheckpoint(done) {
    made.inc()
    lag.set(Math.max(0, done.frames - done.copied))
  })
}
