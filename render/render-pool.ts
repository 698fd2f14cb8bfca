/**
 * The render workers (render-worker.ts): up to `size` worker threads, started as renders need
 * them (plus one spare), each running one render at a time. A worker that outlives a render's time limit by the
 * grace below (the engine checks its deadline on its own, so only a stuck engine does) or that
 * fails is ended; its render answers 422 and the next render starts a new worker.
 */
import type { Worker } from 'node:worker_threads'
import { startWorker } from '../lib/worker-boot.js'
import { renderError } from './errors.js'
import type { RenderReply, RenderRequest, SandboxLimits } from './protocol.js'
import type { EncodedData } from './render-data.js'

export interface RenderPool {
  /** At most `size` at once: the caller queues the rest (gate.ts). */
  run(body: string, data: EncodedData): Promise<string>
  /** Workers alive now (busy, starting or idle). */
  readonly workers: number
  close(): void
}

interface Job {
  id: number
  resolve(html: string): void
  reject(error: Error): void
  timer: NodeJS.Timeout
}

interface Slot {
  worker: Worker
  ready: Promise<void>
  job: Job | undefined
  /** Ends the worker once it has waited idle this long (its heaps and WebAssembly memory go back). */
  idleTimer?: NodeJS.Timeout
}

const WATCHDOG_GRACE_MS = 2000
const STARTUP_TIMEOUT_MS = 30_000
/**
 * A worker's own heap holds the page as text on its way out (up to 16 MB of UTF-8, twice that as
 * a string); the layout's memory is the engine's WebAssembly memory, outside this heap. The native
 * stack leaves room for the engine's own 1 MB stack (quickjs.ts) several times over. The young
 * generation is small: a render allocates little on this heap (a page larger than 128 KB goes to
 * the large-object space anyway), and at 32 MB each worker held about 8 MB more for nothing.
 */
const WORKER_LIMITS = { maxOldGenerationSizeMb: 256, maxYoungGenerationSizeMb: 8, stackSizeMb: 8 }

/**
 * `idleMs`: a worker idle that long is ended, so a ward server that prints now and then does not
 * hold the workers' memory all day; the next print starts one again (0: workers stay).
 */
export function createRenderPool(limits: SandboxLimits, size: number, idleMs = 0): RenderPool {
  const idle: Slot[] = []
  const slots = new Set<Slot>()
  let closed = false
  let nextId = 1

  function spawn(): Slot {
    const worker = startWorker(import.meta.url, 'render-worker', WORKER_LIMITS)
    const slot: Slot = { worker, ready: Promise.resolve(), job: undefined }
    slot.ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => end(slot, new Error('the render worker did not start')), STARTUP_TIMEOUT_MS)
      worker.on('message', (reply: RenderReply) => {
        if (!('ready' in reply)) return onReply(slot, reply)
        clearTimeout(timer)
        resolve()
      })
      worker.on('error', (error: Error & { code?: string }) => end(slot, error))
      worker.on('exit', (code) => {
        clearTimeout(timer)
        reject(new Error(`the render worker stopped (${code})`))
        end(slot, new Error(`the render worker stopped (${code})`))
      })
    })
    slot.ready.catch(() => undefined)
    slots.add(slot)
    return slot
  }

  /** An idle worker must not keep the service alive; a busy one must. */
  function setBusy(slot: Slot, job: Job | undefined): void {
    slot.job = job
    if (job) slot.worker.ref()
    else slot.worker.unref()
  }

  function settle(slot: Slot): Job | undefined {
    const job = slot.job
    if (!job) return undefined
    clearTimeout(job.timer)
    setBusy(slot, undefined)
    return job
  }

  function onReply(slot: Slot, reply: Exclude<RenderReply, { ready: true }>): void {
    if (slot.job?.id !== reply.id) return
    const job = settle(slot)
    if (slots.has(slot)) makeIdle(slot)
    if (reply.ok) job?.resolve(reply.html)
    else job?.reject(renderError(reply.code, reply.message))
  }

  function makeIdle(slot: Slot): void {
    idle.push(slot)
    if (idleMs <= 0) return
    slot.idleTimer = setTimeout(() => end(slot, new Error('idle')), idleMs)
    slot.idleTimer.unref()
  }

  function takeIdle(): Slot | undefined {
    const slot = idle.pop()
    if (slot) clearTimeout(slot.idleTimer)
    return slot
  }

  /** Ends a worker for good; its render, if any, fails with what went wrong. */
  function end(slot: Slot, cause: Error & { code?: string }, error?: Error): void {
    if (!slots.delete(slot)) return
    clearTimeout(slot.idleTimer)
    const at = idle.indexOf(slot)
    if (at >= 0) idle.splice(at, 1)
    void slot.worker.terminate()
    const job = settle(slot)
    if (!job) return
    if (error) job.reject(error)
    else if (cause.code === 'ERR_WORKER_OUT_OF_MEMORY') {
      job.reject(renderError('RENDER_MEMORY_LIMIT', `a template exceeded the memory limit of ${limits.memoryMb} MB`))
    } else job.reject(renderError('RENDER_FAILED', 'the render was interrupted; please try again'))
  }

  function onWatchdog(slot: Slot): void {
    const error = renderError('RENDER_TIMEOUT', `the template exceeded the time limit of ${limits.timeoutMs} ms`)
    end(slot, error, error)
  }

  async function run(body: string, data: EncodedData): Promise<string> {
    if (closed) throw new Error('the renderer is closed')
    const cold = slots.size === 0
    const slot = takeIdle() ?? (slots.size < size ? spawn() : undefined)
    if (!slot) throw new Error('every render worker is busy')
    // One worker waits ready beside the busy ones, so a render that comes while others run does
    // not wait for a worker to start (a tenth of a second, seconds on a loaded machine).
    const spare = idle.length === 0 && slots.size < size ? spawn() : undefined
    if (spare) makeIdle(spare)
    // A slot that is not idle belongs to this render alone, while it starts too. On a cold start
    // the spare starts alongside; waiting for it as well means that once the first print is
    // answered, the next ones find a worker ready.
    await slot.ready
    if (cold) await spare?.ready.catch(() => undefined)
    if (!slots.has(slot)) throw new Error('the renderer is closed')
    const id = nextId++
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => onWatchdog(slot), limits.timeoutMs + WATCHDOG_GRACE_MS)
      setBusy(slot, { id, resolve, reject, timer })
      slot.worker.postMessage({ id, body, data, limits } satisfies RenderRequest)
    })
  }

  return {
    run,
    get workers() {
      return slots.size
    },
    close() {
      closed = true
      const error = new Error('the renderer is closed')
      for (const slot of [...slots]) end(slot, error, error)
    },
  }
}
