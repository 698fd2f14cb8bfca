import { renderError } from './errors.js'

/**
 * Caps how many renders run at once: each may grow to the memory limit, so a burst of print
 * requests would otherwise multiply it. Waiting renders queue in arrival order, at most
 * `maxWaiting` of them: past that a render is refused at once (RENDER_BUSY), since the caller is
 * better served by a retry later than by a wait no client would sit through, and the queue's
 * memory (each waiting render holds its data) stays bounded. A render whose caller gave up
 * (`signal`) leaves the queue and never runs.
 */
export interface Gate {
  run<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T>
  /** Renders waiting for their turn. */
  readonly waiting: number
}

export function createGate(maxConcurrent: number, maxWaiting = Number.POSITIVE_INFINITY): Gate {
  const waiting: Array<() => void> = []
  let running = 0

  function release(): void {
    const next = waiting.shift()
    if (next) next()
    else running--
  }

  function acquire(signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted) return Promise.reject(cancelled())
    if (running < maxConcurrent) {
      running++
      return Promise.resolve()
    }
    if (waiting.length >= maxWaiting) {
      return Promise.reject(
        renderError('RENDER_BUSY', `every print worker is busy and ${waiting.length} prints are waiting; try again`),
      )
    }
    return new Promise((resolve, reject) => {
      const start = () => {
        signal?.removeEventListener('abort', leave)
        resolve()
      }
      const leave = () => {
        waiting.splice(waiting.indexOf(start), 1)
        reject(cancelled())
      }
      signal?.addEventListener('abort', leave, { once: true })
      waiting.push(start)
    })
  }

  return {
    get waiting() {
      return waiting.length
    },
    async run(task, signal) {
      await acquire(signal)
      try {
        return await task()
      } finally {
        release()
      }
    },
  }
}

function cancelled() {
  return renderError('RENDER_CANCELLED', 'the client closed the connection before a print worker was free')
}
