/**
 * Renders user-written pug and ejs print layouts. Templates are compiled in a worker thread
 * (compiler.ts) and run in a fresh QuickJS WebAssembly instance per render (quickjs.ts) in one
 * of the render workers (render-pool.ts), with a time, memory and output limit. Compiled code is
 * cached by what it is made from (engine and layout), so templates that share a layout share one
 * copy; an error (an exceeded time limit included) is cached per cache key, i.e. per version.
 */
import { createHash } from 'node:crypto'
import { availableParallelism } from 'node:os'
import { createLru } from '../lib/lru.js'
import { createCompiler } from './compiler.js'
import { RenderError, type RenderErrorCode, renderError } from './errors.js'
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
  /** Renders waiting for a worker. */
  waiting: number
  /** Renders that failed since the start, by their error code (RENDER_TIMEOUT ...; other: not a render error). */
  failures: Partial<Record<Exclude<RenderErrorCode, RefusalCode> | 'other', number>>
  /** Renders never run since the start: the queue was full (busy), the caller gave up while waiting (cancelled). */
  refused: { busy: number; cancelled: number }
}

type RefusalCode = 'RENDER_BUSY' | 'RENDER_CANCELLED'

export interface Renderer {
  /** `signal`: the caller gave up; a render still waiting for a worker leaves the queue (RENDER_CANCELLED). */
  render(job: RenderJob, signal?: AbortSignal): Promise<string>
  stats(): RenderStats
  /** Worker threads alive now: render workers and the compile worker. */
  workers(): number
  close(): void
}

export interface RendererOptions {
  /** At most this many cache entries (default: no bound but `cacheBytes`). */
  cacheEntries?: number
  /** Memory for compiled layouts (a JavaScript string takes about two bytes a character). */
  cacheBytes?: number
  /** Renders running at once, each in a worker of its own; each may use up to `memoryMb`. */
  maxConcurrent?: number
  /** Renders of one owner that may wait for a worker (default: no bound); one more is refused (RENDER_BUSY). */
  maxWaiting?: number
  compileTimeoutMs?: number
  /** Workers (render and compile) idle this long are ended; 0 keeps them. */
  workerIdleMs?: number
  /**
   * The compile worker's own idle time (default: `workerIdleMs`). Compiled layouts are cached by
   * content, so once a ward's layouts are compiled the compile worker (its heap holds pug and its
   * parser, ~20 MB, plus its thread's malloc arena) has nothing to do while prints go on.
   */
  compilerIdleMs?: number
}

/** A compiled layout, under its content key; or an error, under the job's cache key. */
type Compiled = { ok: true; body: string } | { ok: false; engine: RenderEngine; source: string; error: RenderError }

interface InFlight {
  body: Promise<string>
}

const DEFAULT_CACHE_BYTES = 16 * 1024 * 1024
/** What an entry costs beside its text (the map entry, its key, the object): bounds tiny entries. */
const ENTRY_OVERHEAD_BYTES = 256

function weigh(compiled: Compiled): number {
  return ENTRY_OVERHEAD_BYTES + 2 * (compiled.ok ? compiled.body.length : compiled.source.length)
}

/**
 * The compiled code depends only on the engine and the layout: wards copy their layouts from one
 * another, and each copy (each template, each version) would otherwise keep and compile its own.
 */
function contentKey(job: RenderJob): string {
  return `c:${job.engine}:${createHash('sha256').update(job.source).digest('base64')}`
}

/** A reused key with other source or engine is a new template, never a stale cache hit. */
function sameTemplate(entry: { engine: RenderEngine; source: string }, job: RenderJob): boolean {
  return entry.engine === job.engine && entry.source === job.source
}

export function createRenderer(limits: RenderLimits, options: RendererOptions = {}): Renderer {
  const compiler = createCompiler(
    options.compileTimeoutMs ?? Math.max(2000, limits.timeoutMs * 5),
    options.compilerIdleMs ?? options.workerIdleMs ?? 0,
  )
  const maxConcurrent = options.maxConcurrent ?? availableParallelism()
  const gate = createGate(maxConcurrent, options.maxWaiting)
  const pool = createRenderPool(
    { timeoutMs: limits.timeoutMs, memoryMb: limits.memoryMb, maxOutputBytes: limits.maxOutputBytes },
    maxConcurrent,
    options.workerIdleMs ?? 0,
  )
  const cache = createLru<Compiled>(
    options.cacheEntries ?? Number.POSITIVE_INFINITY,
    options.cacheBytes ?? DEFAULT_CACHE_BYTES,
    weigh,
  )
  const inFlight = new Map<string, InFlight>()
  const counters = { compiles: 0, cacheHits: 0 }
  const failures: RenderStats['failures'] = {}

  const refused = { busy: 0, cancelled: 0 }

  function countFailure(error: unknown): never {
    const code = error instanceof RenderError ? error.code : 'other'
    if (code === 'RENDER_BUSY') refused.busy++
    else if (code === 'RENDER_CANCELLED') refused.cancelled++
    else failures[code] = (failures[code] ?? 0) + 1
    throw error
  }
  let closed = false

  async function compileAndCache(job: RenderJob, key: string): Promise<string> {
    counters.compiles++
    const flight: InFlight = { body: compiler.compile(job.engine, job.source, job.owner) }
    inFlight.set(key, flight)
    try {
      const body = await flight.body
      cache.set(key, { ok: true, body })
      return body
    } catch (error) {
      // The compiler rejects with a RenderError only for what the layout itself caused: a syntax
      // error, or the time or memory limit of its own compile (the clock starts when the worker
      // takes the job, so waiting in the queue does not count). Remembered like a result, so a
      // layout that takes too long to compile costs that time once per version, not per request;
      // per version, not per layout, so saving the template again is a way to try once more.
      // Anything else (the worker failed to start, the renderer closed) is tried again next time.
      if (error instanceof RenderError) {
        cache.set(`v:${job.cacheKey}`, { ok: false, engine: job.engine, source: job.source, error })
      }
      throw error
    } finally {
      if (inFlight.get(key) === flight) inFlight.delete(key)
    }
  }

  function compiled(job: RenderJob): Promise<string> {
    const failed = cache.get(`v:${job.cacheKey}`)
    if (failed && !failed.ok && sameTemplate(failed, job)) {
      counters.cacheHits++
      return Promise.reject(renderError(failed.error.code, failed.error.message))
    }
    const key = contentKey(job)
    const cached = cache.get(key)
    if (cached?.ok) {
      counters.cacheHits++
      return Promise.resolve(cached.body)
    }
    const flight = inFlight.get(key)
    if (flight) {
      counters.cacheHits++
      return flight.body
    }
    return compileAndCache(job, key)
  }

  async function renderOne(job: RenderJob, signal: AbortSignal | undefined): Promise<string> {
    if (closed) throw new Error('the renderer is closed')
    if (!RENDER_ENGINES.includes(job.engine)) {
      throw renderError('RENDER_COMPILE_FAILED', `unknown template engine "${String(job.engine)}"`)
    }
    const body = await compiled(job)
    // Encoded before waiting for a worker: data that cannot be copied fails at once.
    const data = encodeData(job.data)
    return gate.run(() => pool.run(body, data), { owner: job.owner ?? '', signal })
  }

  return {
    render(job, signal) {
      return renderOne(job, signal).catch(countFailure)
    },
    stats() {
      return {
        ...counters,
        cached: cache.size,
        waiting: gate.waiting,
        failures: { ...failures },
        refused: { ...refused },
      }
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
