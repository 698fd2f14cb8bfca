/**
 * Runs template compilation in one worker thread with a time and heap limit. Compiling a large
 * pug layout takes tens to hundreds of milliseconds, which must not block the event loop, and a
 * crafted template may make a parser slow; a worker can be terminated mid-loop and is then
 * replaced by a fresh one for the next request.
 *
 * Waiting compiles take turns by owner (the template's facility, see createFairQueue), so a pile
 * of slow layouts from one owner delays another owner's compile by one compile at a time, not by
 * the whole pile.
 */
import type { Worker } from 'node:worker_threads'
import { startWorker } from '../lib/worker-boot.js'
import type { CompileEngine, CompileOutcome } from './compile.js'
import type { CompileRequest } from './compile-worker.js'
import { renderError } from './errors.js'
import { createFairQueue } from './fair-queue.js'

export interface Compiler {
  /** `owner` groups compiles for fair turns; compiles of one owner run in arrival order. */
  compile(engine: CompileEngine, source: string, owner?: string): Promise<string>
  /** Whether the worker is alive now. */
  readonly running: boolean
  close(): void
}

interface Pending extends CompileRequest {
  resolve(body: string): void
  reject(error: Error): void
}

type WorkerMessage = { ready: true } | (CompileOutcome & { id: number })

// A young generation of 8 MB instead of 32 saves about 11 MB while the worker lives; compiles were
// no slower in a measurement (docs/PERFORMANCE.md, "Server RSS").
const WORKER_LIMITS = { maxOldGenerationSizeMb: 128, maxYoungGenerationSizeMb: 8, stackSizeMb: 4 }
const STARTUP_TIMEOUT_MS = 30_000

/** `idleMs`: the worker is ended after that long without a compile (0: it stays). */
export function createCompiler(timeoutMs: number, idleMs = 0): Compiler {
  const queue = createFairQueue<Pending>()
  let current: Pending | undefined
  let worker: Worker | undefined
  let ready = false
  let closed = false
  let timer: NodeJS.Timeout | undefined
  let idleTimer: NodeJS.Timeout | undefined
  let nextId = 1

  function spawn(): Worker {
    const spawned = startWorker(import.meta.url, 'compile-worker', WORKER_LIMITS)
    spawned.on('message', (message: WorkerMessage) => onMessage(spawned, message))
    spawned.on('error', (error) => onFailure(spawned, error))
    spawned.on('exit', (code) => onFailure(spawned, new Error(`template compiler exited with code ${code}`)))
    timer = setTimeout(() => onFailure(spawned, new Error('template compiler did not start')), STARTUP_TIMEOUT_MS)
    return spawned
  }

  /** An idle worker must not keep the service alive; a busy one must. */
  function updateRef(): void {
    if (current || queue.size > 0) worker?.ref()
    else worker?.unref()
  }

  /** Nothing to compile: the worker's heap goes back after a while (a new one starts when needed). */
  function idleLater(): void {
    clearTimeout(idleTimer)
    if (idleMs <= 0 || !worker || closed) return
    idleTimer = setTimeout(() => {
      if (!current && queue.size === 0) discardWorker()
    }, idleMs)
    idleTimer.unref()
  }

  function pump(): void {
    updateRef()
    clearTimeout(idleTimer)
    if (!closed && !current && queue.size === 0) idleLater()
    if (closed || current || queue.size === 0) return
    if (!worker) {
      worker = spawn()
      return
    }
    if (!ready) return
    current = queue.shift()
    if (!current) return
    const { id, engine, source } = current
    worker.postMessage({ id, engine, source } satisfies CompileRequest)
    timer = setTimeout(onTimeout, timeoutMs)
    updateRef()
  }

  function discardWorker(): void {
    clearTimeout(timer)
    const old = worker
    worker = undefined
    ready = false
    void old?.terminate()
  }

  function takeCurrent(): Pending | undefined {
    const job = current
    current = undefined
    queue.finished()
    return job
  }

  function onMessage(from: Worker, message: WorkerMessage): void {
    if (from !== worker) return
    clearTimeout(timer)
    if ('ready' in message) {
      ready = true
    } else if (current?.id === message.id) {
      const job = takeCurrent()
      if (message.ok) job?.resolve(message.body)
      else job?.reject(renderError('RENDER_COMPILE_FAILED', message.message))
    }
    pump()
  }

  /**
   * Timers run before the worker's messages are read. After the main thread stalled past the
   * limit, the worker's answer may already be waiting: read it first (setImmediate runs after
   * the poll phase), so a compile that finished in time is never recorded as a timeout (and a
   * timeout is cached per template version).
   */
  function onTimeout(): void {
    const job = current
    setImmediate(() => {
      if (!job || current !== job) return
      discardWorker()
      takeCurrent()?.reject(
        renderError('RENDER_TIMEOUT', `template compilation exceeded the time limit of ${timeoutMs} ms`),
      )
      pump()
    })
  }

  function onFailure(from: Worker, error: Error & { code?: string }): void {
    if (from !== worker) return
    const wasReady = ready
    discardWorker()
    const job = takeCurrent()
    if (job && error.code === 'ERR_WORKER_OUT_OF_MEMORY') {
      job.reject(renderError('RENDER_MEMORY_LIMIT', 'template compilation exceeded the memory limit'))
    } else if (job) {
      job.reject(new Error(`template compiler failed: ${error.message}`, { cause: error }))
    } else if (!wasReady) {
      // The worker cannot start at all: fail what waits instead of respawning forever.
      for (const waiting of queue.splice()) waiting.reject(new Error(`template compiler failed: ${error.message}`))
    }
    pump()
  }

  return {
    get running() {
      return worker !== undefined
    },
    compile(engine, source, owner = '') {
      if (closed) return Promise.reject(new Error('the renderer is closed'))
      return new Promise<string>((resolve, reject) => {
        queue.push(owner, { id: nextId++, engine, source, resolve, reject })
        pump()
      })
    },
    close() {
      closed = true
      clearTimeout(idleTimer)
      discardWorker()
      const error = new Error('the renderer is closed')
      takeCurrent()?.reject(error)
      for (const waiting of queue.splice()) waiting.reject(error)
    },
  }
}
