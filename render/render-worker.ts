/**
 * Entry of a render worker: one render at a time, each in a fresh QuickJS instance (quickjs.ts).
 * QuickJS runs synchronously, so renders live in worker threads, one per render that may run at
 * once, and the service's event loop never waits for a layout.
 */
import { parentPort } from 'node:worker_threads'
import { RenderError } from './errors.js'
import type { RenderReply, RenderRequest } from './protocol.js'
import { runInQuickJS, warmUp } from './quickjs.js'

function failure(id: number, error: unknown): RenderReply {
  if (error instanceof RenderError) return { id, ok: false, code: error.code, message: error.message }
  return { id, ok: false, code: 'RENDER_FAILED', message: 'the template could not be run' }
}

async function handle(request: RenderRequest): Promise<RenderReply> {
  const { id, body, data, limits } = request
  try {
    return { id, ok: true, html: await runInQuickJS(body, data, limits) }
  } catch (error) {
    return failure(id, error)
  }
}

// The engine is compiled and tried once before `ready`, so a render's time is its own.
await warmUp()
parentPort?.on('message', (request: RenderRequest) => {
  void handle(request).then((reply) => parentPort?.postMessage(reply))
})
parentPort?.postMessage({ ready: true } satisfies RenderReply)
