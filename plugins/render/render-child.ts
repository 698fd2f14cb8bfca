/**
 * Entry of the render process. isolated-vm cannot contain every out-of-memory: one large
 * allocation (e.g. `new Array(2 ** 27 - 1).fill(0)`) aborts the whole process whatever the
 * isolate's memory limit. Isolates therefore live here, and such a template kills only this
 * process, which the service replaces.
 */
import { RenderError } from './errors.js'
import { runInIsolate } from './isolate.js'
import type { RenderReply, RenderRequest } from './protocol.js'

/**
 * isolated-vm's advice: once V8 has lost control of an isolate, end the process. SIGKILL,
 * because a normal exit can hang on the isolate's stuck thread; the service reads an
 * unexpected SIGKILL as "out of memory".
 */
function onCatastrophicError(): void {
  process.kill(process.pid, 'SIGKILL')
}

async function handle(request: RenderRequest): Promise<RenderReply> {
  try {
    const html = await runInIsolate(request.body, request.data, request.limits, onCatastrophicError)
    return { id: request.id, ok: true, html }
  } catch (error) {
    if (error instanceof RenderError) return { id: request.id, ok: false, code: error.code, message: error.message }
    return { id: request.id, ok: false, code: 'RENDER_FAILED', message: 'the template could not be run' }
  }
}

process.on('message', (request: RenderRequest) => {
  void handle(request).then((reply) => process.send?.(reply))
})
// Without the service there is nobody to answer: do not linger as an orphan.
process.on('disconnect', () => process.exit(0))
process.send?.({ ready: true } satisfies RenderReply)
