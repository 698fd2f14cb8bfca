/**
 * Renders user-written pug and ejs print layouts. Templates are compiled in a worker thread
 * (compiler.ts) and run in a fresh QuickJS WebAssembly instance per render (quickjs.ts) in one
 * of the render workers (render-pool.ts), with a time, memory and output limit; the outcome of a
 * compile (the code, or the error, an exceeded time limit included) is cached per cache key.
 */
import { availableParallelism } from 'node:os'
import { createLru } from '../lib/lru.js'
import { createCompiler } from './compiler.js'
import { RenderError, renderError } from './errors.js'
import { createGate } from './gate.js'
import { encodeData } from './render-data.js'
import { createRenderPool } from './render-pool.js'

export {
  RenderCompileFailedError,
  RenderError,
  type RenderErrorCode,
  RenderFailedError,
  RenderMemoryLimitError,
  RenderOutputTooLargeError,
  RenderTimeoutError,
} from './errors.js'

export type RenderEngine = 'pug' | 'ejs'

export const RENDER_ENGINES: readonly RenderEngine[] = Object.freeze(['pug', 'ejs'] as const)

export interface RenderLimits {
  timeoutMs: number
  memoryMb: number
  maxOutputBytes: number
}

export interface RenderJob {
  engine: RenderEngine
  source: string
  /** Identifies one version of one template, e.g. `${id}:${version}:${engine}`. */
  cacheKey: string
  data: Record<string, unknown>
  /**
   * Whose compile this is, e.g. the template's facility: compiles of one owner run one after
   * another and take turns with other owners' (compiler.ts).
   */
  owner?: string
}

export interface RenderStats {
  compiles: number
  cacheHits: number
  cached: number
}

export interface Renderer {
  render(job: RenderJob): Promise<string>
  stats(): RenderStats
  /** Worker threads alive now: render workers and the compile worker. */
  workers(): number
  close(): void
}

export interface RendererOptions {
  cacheEntries?: number
  /** Memory for compiled layouts (a JavaScript string takes about two bytes a character). */
  cacheBytes?: number
  /** Renders running at once, each in a worker of its own; each may use up to `memoryMb`. */
  maxConcurrent?: number
  compileTimeoutMs?: number
  /** Workers (render and compile) idle this long are ended; 0 keeps them. */
  workerIdleMs?: number
}

interface Compiled {
  engine: RenderEngine
  source: string
  outcome: { ok: true; body: string } | { ok: false; error: RenderError }
}

interface InFlight {
  engine: RenderEngine
  source: string
  body: Promise<string>
}

const DEFAULT_CACHE_BYTES = 16 * 1024 * 1024

function weigh(compiled: Compiled): number {
  return 2 * (compiled.source.length + (compiled.outcome.ok ? compiled.outcome.body.length : 0))
}

/** A reused key with other source or engine is a new template, never a stale cache hit. */
function sameTemplate(entry: { engine: RenderEngine; source: string }, job: RenderJob): boolean {
  return entry.engine === job.engine && entry.source === job.source
}

export function createRenderer(limits: RenderLimits, options: RendererOptions = {}): Renderer {
  const compiler = createCompiler(
    options.compileTimeoutMs ?? Math.max(2000, limits.timeoutMs * 5),
    options.workerIdleMs ?? 0,
  )
  const maxConcurrent = options.maxConcurrent ?? availableParallelism()
  const gate = createGate(maxConcurrent)
  const pool = createRenderPool(
    { timeoutMs: limits.timeoutMs, memoryMb: limits.memoryMb, maxOutputBytes: limits.maxOutputBytes },
    maxConcurrent,
    options.workerIdleMs ?? 0,
  )
  const cache = createLru<Compiled>(options.cacheEntries ?? 200, options.cacheBytes ?? DEFAULT_CACHE_BYTES, weigh)
  const inFlight = new Map<string, InFlight>()
  const counters = { compiles: 0, cacheHits: 0 }
  let closed = false

  async function compileAndCache(job: RenderJob): Promise<string> {
    counters.compiles++
    const compiling = compiler.compile(job.engine, job.source, job.owner)
    const flight: InFlight = { engine: job.engine, source: job.source, body: compiling }
    inFlight.set(job.cacheKey, flight)
    try {
      const body = await flight.body
      cache.set(job.cacheKey, { engine: job.engine, source: job.source, outcome: { ok: true, body } })
      return body
    } catch (error) {
      // The compiler rejects with a RenderError only for what the layout itself caused: a syntax
      // error, or the time or memory limit of its own compile (the clock starts when the worker
      // takes the job, so waiting in the queue does not count). Remembered like a result, so a
      // layout that takes too long to compile costs that time once per version, not per request.
      // Anything else (the worker failed to start, the renderer closed) is tried again next time.
      if (error instanceof RenderError) {
        cache.set(job.cacheKey, { engine: job.engine, source: job.source, outcome: { ok: false, error } })
      }
      throw error
    } finally {
      if (inFlight.get(job.cacheKey) === flight) inFlight.delete(job.cacheKey)
    }
  }

  function compiled(job: RenderJob): Promise<string> {
    const cached = cache.get(job.cacheKey)
    if (cached && sameTemplate(cached, job)) {
      counters.cacheHits++
      if (cached.outcome.ok) return Promise.resolve(cached.outcome.body)
      return Promise.reject(renderError(cached.outcome.error.code, cached.outcome.error.message))
    }
    const flight = inFlight.get(job.cacheKey)
    if (flight && sameTemplate(flight, job)) {
      counters.cacheHits++
      return flight.body
    }
    return compileAndCache(job)
  }

  return {
    async render(job) {
      if (closed) throw new Error('the renderer is closed')
      if (!RENDER_ENGINES.includes(job.engine)) {
        throw renderError('RENDER_COMPILE_FAILED', `unknown template engine "${String(job.engine)}"`)
      }
      const body = await compiled(job)
      // Encoded before waiting for a worker: data that cannot be copied fails at once.
      const data = encodeData(job.data)
      return gate.run(() => pool.run(body, data))
    },
    stats() {
      return { ...counters, cached: cache.size }
    },
    workers() {
      return pool.workers + (compiler.running ? 1 : 0)
    },
    close() {
      closed = true
      compiler.close()
      pool.close()
    },
  }
}
