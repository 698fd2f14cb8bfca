import type { Test } from 'tap'
import {
  createRenderer,
  RenderError,
  type RenderErrorCode,
  type Renderer,
  type RendererOptions,
  type RenderJob,
  type RenderLimits,
} from '../../render/sandbox.js'

export const DEFAULT_LIMITS: RenderLimits = { timeoutMs: 1000, memoryMb: 32, maxOutputBytes: 2_097_152 }

/** A renderer closed when the test ends. */
export function testRenderer(t: Test, limits: Partial<RenderLimits> = {}, options: RendererOptions = {}): Renderer {
  const renderer = createRenderer({ ...DEFAULT_LIMITS, ...limits }, options)
  t.teardown(() => renderer.close())
  return renderer
}

let keys = 0

/** A job with a cache key of its own, unless the test passes one. */
export function job(
  engine: RenderJob['engine'],
  source: string,
  data: Record<string, unknown> = {},
  cacheKey?: string,
) {
  return { engine, source, data, cacheKey: cacheKey ?? `test-${++keys}:1:${engine}` }
}

/** Resolves to the RenderError the promise rejects with, after checking its public shape. */
export async function rejection(t: Test, promise: Promise<unknown>, code: RenderErrorCode): Promise<RenderError> {
  const error = await promise.then(
    (value) => {
      throw new Error(`expected ${code}, rendered ${JSON.stringify(String(value).slice(0, 200))}`)
    },
    (reason: unknown) => reason,
  )
  t.ok(error instanceof RenderError, 'is a RenderError')
  const renderError = error as RenderError
  t.equal(renderError.code, code, `code is ${code} (message: ${renderError.message.slice(0, 300)})`)
  t.equal(renderError.statusCode, 422, 'statusCode is 422')
  t.notMatch(renderError.message, /\/work\/|node_modules|file:\/\/|\.ts:\d|isolated-vm| {4}at /, 'no host details')
  return renderError
}

/**
 * The time limit of renders a test does not mean to stop (memory bombs, huge output, layouts kept
 * busy): the most RENDER_TIMEOUT_MS allows, so that no outcome depends on how fast the machine is.
 */
export const UNREACHED_TIMEOUT_MS = 60_000

/**
 * Runs `during` while a render is in flight, and answers what both gave. `hold(holdMs)` starts a
 * render that stays busy for `holdMs` of wall time (a layout that loops on Date.now(), never a
 * loop of so many steps, which takes a second on one machine and twenty on another). Should the
 * render be done before `during` is (a machine too slow for that hold), both run again with twice
 * the hold, so the render is always still running when `during` ends, however fast the machine.
 */
export async function whileRendering<H, D>(
  hold: (holdMs: number) => Promise<H>,
  during: () => Promise<D>,
  holdMs = 250,
): Promise<{ held: H; result: D; holdMs: number }> {
  for (; ; holdMs *= 2) {
    let settled = false
    const holding = hold(holdMs).finally(() => {
      settled = true
    })
    holding.catch(() => undefined) // awaited below; not unhandled meanwhile
    const result = await during()
    const inFlight = !settled
    const held = await holding
    if (inFlight) return { held, result, holdMs }
    if (holdMs >= 16_000) throw new Error(`the render held for ${holdMs} ms was done before the other work`)
  }
}

/**
 * About 200 KB (the most a form template may hold) that pug takes minutes to compile: at each of
 * its 66 000 spaces, pug's attribute lexer parses the value so far again (`void void … x`). A
 * compile time limit of seconds stops it on any machine. `n` makes each text (and cache key) its own.
 */
export function slowLayout(n: number): string {
  return `p(a=${'void  '.repeat(33_000)}x) slow ${n}`
}
