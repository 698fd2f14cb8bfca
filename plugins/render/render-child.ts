/**
 * Entry of the render process. isolated-vm cannot contain every out-of-memory: one large
 * allocation (e.g. `new Array(2 ** 27 - 1).fill(0)`) aborts the whole process whatever the
 * isolate's memory limit. Isolates therefore live here, and such a template kills only this
 * process, which the service replaces.
 */
import { RenderError } from './errors.js'
import { copyInput, runInIsolate } from './isolate.js'
import type { RenderReply, RenderRequest } from './protocol.js'

/**
 * isolated-vm's advice: once V8 has lost control of an isolate, end the process. SIGKILL,
 * because a normal exit can hang on the isolate's stuck thread; the service reads an
 * unexpected SIGKILL as "out of memory".
 */
function onCatastrophicError(): void {
  process.kill(process.pid, 'SIGKILL')
}

function failure(id: number, error: unknown): RenderReply {
  if (error instanceof RenderError) return { id, ok: false, code: error.code, message: error.message }
  return { id, ok: false, code: 'RENDER_FAILED', message: 'the template could not be run' }
}

/**
 * The request's data is decoded and copied out of this heap before the first await, so the
 * message (body and data) is not kept alive while the render runs.
 */
function handle(request: RenderRequest): Promise<RenderReply> {
  const { id, limits } = request
  try {
    const input = copyInput(request.body, request.data, limits.maxOutputBytes)
    return runInIsolate(input, limits, onCatastrophicError).then(
      (html): RenderReply => ({ id, ok: true, html }),
      (error: unknown) => failure(id, error),
    )
  } catch (error) {
    return Promise.resolve(failure(id, error))
  }
}

process.on('message', (request: RenderRequest) => {
  void handle(request).then((reply) => process.send?.(reply))
})
// Without the service there is nobody to answer: do not linger as an orphan.
process.on('disconnect', () => process.exit(0))
process.send?.({ ready: true } satisfies RenderReply)
