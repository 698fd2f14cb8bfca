/** Where a held request goes on (Fastify's `done` of its hook), and where its failure is answered. */
export interface Held {
  goOn: () => void
  fail: (error: Error) => void
}

export interface TurnBatchOptions {
  /** Looks at the database once for every request held so far (never throws). */
  look: () => void
  /** Ends what `look` opened (the read snapshot), once the batch's microtasks are done. */
  end: () => void
  /** The most requests that go on after one look, so that a burst does not hold the first ones long. */
  batchSize: number
}

/**
 * Holds the requests read from the sockets in one turn of the event loop until the turn's I/O is
 * done (setImmediate runs after it), then looks at the database once and lets them go on, one after
 * the other, in the order they arrived: one look taken after the last of them arrived is as fresh
 * for each as a look of its own (docs/DECISIONS.md, "The requests of one turn go on together").
 * At most `batchSize` go on after one look; the rest wait for the next turn's (they arrived before
 * it too), behind no later request. The end is scheduled right after the batch, so whatever the
 * look opened is given back in the same turn, after the microtasks the batch started.
 */
export function createTurnBatch(opts: TurnBatchOptions): (held: Held) => void {
  const waiting: Held[] = []
  let scheduled = false

  function schedule(): void {
    scheduled = true
    setImmediate(goOnTogether)
    setImmediate(opts.end)
  }

  function goOnTogether(): void {
    scheduled = false
    const batch = waiting.splice(0, opts.batchSize)
    if (waiting.length > 0) schedule()
    opts.look()
    for (const held of batch) {
      try {
        held.goOn()
      } catch (error) {
        // Called from Fastify's hook runner, a throw further on would have become this request's
        // error answer; here it must not stop the batch's other requests, nor the process.
        held.fail(error instanceof Error ? error : new Error(String(error)))
      }
    }
  }

  return function hold(held: Held): void {
    waiting.push(held)
    if (!scheduled) schedule()
  }
}
