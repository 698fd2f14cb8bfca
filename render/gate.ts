import { renderError } from './errors.js'
import { createFairQueue } from './fair-queue.js'

/**
 * Caps how many renders run at once: each may grow to the memory limit, so a burst of print
 * requests would otherwise multiply it. Waiting renders take turns by owner (the template's
 * facility; fair-queue.ts), so one facility's pile of prints delays another's by one print at a
 * time, not by the pile. Each owner may have at most `maxWaiting` renders waiting: past that its
 * next render is refused at once (RENDER_BUSY), since the caller is better served by a retry later
 * than by a wait no client would sit through, the waiting renders' data in memory stays bounded for
 * each owner, and a facility that fills its own places refuses only its own prints. A render whose
 * caller gave up (`signal`) leaves the queue and never runs.
 */
export interface Gate {
  run<T>(task: () => Promise<T>, options?: { owner?: string; signal?: AbortSignal | undefined }): Promise<T>
  /** Renders waiting for their turn. */
  readonly waiting: number
}

export function createGate(maxConcurrent: number, maxWaiting = Number.POSITIVE_INFINITY): Gate {
  const queue = createFairQueue<() => void>()
  let running = 0

  function release(): void {
    queue.finished()
    const next = queue.shift()
    if (next) next()
    else running--
  }

  function acquire(owner: string, signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted) return Promise.reject(cancelled())
    if (running < maxConcurrent) {
      running++
      return Promise.resolve()
    }
    const waiting = queue.waitingOf(owner)
    if (waiting >= maxWaiting) {
      return Promise.reject(
        renderError(
          'RENDER_BUSY',
          `every print worker is busy and ${waiting} prints of this facility are waiting; try again`,
        ),
      )
    }
    return new Promise((resolve, reject) => {
      const start = () => {
        signal?.removeEventListener('abort', leave)
        resolve()
      }
      const leave = () => {
        if (queue.remove(owner, start)) reject(cancelled())
      }
      signal?.addEventListener('abort', leave, { once: true })
      queue.push(owner, start)
    })
  }

  return {
    get waiting() {
      return queue.size
    },
    async run(task, options = {}) {
      await acquire(options.owner ?? '', options.signal)
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
