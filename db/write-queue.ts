import type { Database } from 'better-sqlite3'

/**
 * Group commit. A durable commit waits for the disk (fsync, about a millisecond here), and
 * better-sqlite3 waits synchronously, so one commit per request caps every write at about a
 * thousand a second and stalls every other request meanwhile. The queue collects the writes that
 * arrive during one turn of the event loop and runs them in one transaction, committed with one
 * fsync. Every promise settles only after COMMIT returned, so an answered write is as durable as
 * before (synchronous=FULL).
 *
 * Each write stays atomic and fails alone. A write that throws before changing anything (a 404,
 * a 409 found by a check or by a constraint, which SQLite undoes by itself) just rejects. A write
 * that throws after changing something cannot be undone alone without a savepoint per write (which
 * doubles the cost of every write: SQLite copies each page it touches to a statement journal), so
 * the batch is rolled back and run again without it. Writes must therefore only change the
 * database (ward occupant events feed listeners that write in the same transaction, see
 * plugins/events.ts); a write may run more than once, and its result is the last run's.
 */
export interface WriteQueue {
  run<T>(write: () => T): Promise<T>
}

interface Job {
  write: () => unknown
  resolve: (value: unknown) => void
  reject: (error: unknown) => void
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown }

const queues = new WeakMap<Database, WriteQueue>()

/** The queue of a connection: one per connection, so all its writers share the batches. */
export function writeQueue(db: Database): WriteQueue {
  let queue = queues.get(db)
  if (!queue) {
    queue = createWriteQueue(db)
    queues.set(db, queue)
  }
  return queue
}

function createWriteQueue(db: Database): WriteQueue {
  let pending: Job[] = []
  const begin = db.prepare('BEGIN IMMEDIATE')
  const commit = db.prepare('COMMIT')
  const rollback = db.prepare('ROLLBACK')
  const totalChanges = db.prepare<[], number>('SELECT total_changes()').pluck()

  function runBatch(jobs: Job[]): Outcome[] {
    const outcomes: (Outcome | undefined)[] = []
    let todo = jobs.map((_, i) => i)
    for (;;) {
      begin.run()
      let failedMidway = false
      for (const i of todo) {
        const before = totalChanges.get()
        try {
          outcomes[i] = { ok: true, value: (jobs[i] as Job).write() }
        } catch (error) {
          outcomes[i] = { ok: false, error }
          // Changed something, or some error (disk full, I/O) made SQLite drop the transaction.
          if (totalChanges.get() !== before || !db.inTransaction) {
            failedMidway = true
            break
          }
        }
      }
      if (!failedMidway) {
        commit.run()
        return outcomes as Outcome[]
      }
      if (db.inTransaction) rollback.run()
      // Everything but the failed writes runs again, from the start, in a new transaction.
      todo = todo.filter((i) => outcomes[i]?.ok !== false)
      for (const i of todo) outcomes[i] = undefined
    }
  }

  function flush() {
    const jobs = pending
    pending = []
    let outcomes: Outcome[]
    try {
      outcomes = runBatch(jobs)
    } catch (error) {
      // BEGIN or COMMIT failed: nothing of this batch is stored.
      if (db.open && db.inTransaction) rollback.run()
      for (const job of jobs) job.reject(error)
      return
    }
    jobs.forEach((job, i) => {
      const outcome = outcomes[i] as Outcome
      if (outcome.ok) job.resolve(outcome.value)
      else job.reject(outcome.error)
    })
  }

  return {
    run<T>(write: () => T): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        pending.push({ write, resolve: resolve as (value: unknown) => void, reject })
        // setImmediate runs after the I/O of this turn: the requests that arrived together are
        // all parsed and queued by then.
        if (pending.length === 1) setImmediate(flush)
      })
    },
  }
}
