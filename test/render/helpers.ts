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
