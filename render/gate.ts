/**
 * Caps how many renders run at once: each may grow to the memory limit, so a burst of print
 * requests would otherwise multiply it. Waiting renders queue in arrival order.
 */
export interface Gate {
  run<T>(task: () => Promise<T>): Promise<T>
  /** Renders waiting for their turn. */
  readonly waiting: number
}

export function createGate(maxConcurrent: number): Gate {
  const waiting: Array<() => void> = []
  let running = 0

  function release(): void {
    const next = waiting.shift()
    if (next) next()
    else running--
  }

  function acquire(): Promise<void> {
    if (running < maxConcurrent) {
      running++
      return Promise.resolve()
    }
    return new Promise((resolve) => waiting.push(resolve))
  }

  return {
    get waiting() {
      return waiting.length
    },
    async run(task) {
      await acquire()
      try {
        return await task()
      } finally {
        release()
      }
    },
  }
}
