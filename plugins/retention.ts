import fp from 'fastify-plugin'

declare module 'fastify' {
  interface FastifyInstance {
    retention: Retention
  }
}

export interface RetentionJob {
  /** What is pruned, for the log ("feed events", "read-log entries" ...). */
  name: string
  /** Deletes what is older than its retention at `now`; returns how many rows it deleted. */
  prune(now: number): number
}

export interface Retention {
  /** Prunes now (awaited), then every hour with the others. */
  add(job: RetentionJob): Promise<void>
}

const EVERY_MS = 3_600_000

/**
 * One scheduler for every prune (feed events, read-log entries, idempotency keys). Each prune runs
 * through the write queue, so it joins a group commit and never waits on the event loop for another
 * process's lock; a prune that deleted something runs again until nothing is left, so one that
 * works in batches catches up after a long stop.
 */
export default fp(
  async function retentionPlugin(fastify) {
    const jobs: RetentionJob[] = []

    async function run(job: RetentionJob): Promise<void> {
      try {
        let deleted: number
        do deleted = await fastify.writes.run(() => job.prune(Date.now()))
        while (deleted > 0)
      } catch (error) {
        fastify.log.warn({ err: error }, `pruning ${job.name} failed; it is tried again in an hour`)
      }
    }

    const timer = setInterval(function pruneAll() {
      for (const job of jobs) void run(job)
    }, EVERY_MS)
    timer.unref()
    fastify.addHook('onClose', function stopPruning() {
      clearInterval(timer)
    })

    fastify.decorate('retention', {
      async add(job: RetentionJob) {
        jobs.push(job)
        await run(job)
      },
    })
  },
  { name: 'retention', fastify: '5.x', dependencies: ['db'] },
)
