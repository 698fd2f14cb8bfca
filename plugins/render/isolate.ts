/**
 * Runs a compiled template body in a fresh isolated-vm isolate, one per render, inside the render
 * process (render-child.ts). A fresh isolate means no state, no pending V8 task and no
 * half-terminated heap survives into the next render, and an isolate that hit its memory limit is
 * simply gone. It costs a few milliseconds per render, small next to the compile step that the
 * cache avoids; a pool would save those milliseconds at the price of reasoning about reuse.
 */
import { deserialize } from 'node:v8'
import ivm from 'isolated-vm'
import { RenderError, type RenderErrorCode, renderError } from './errors.js'
import type { IsolateLimits } from './protocol.js'

/**
 * The runner, run before any template code so it can capture intrinsics and remove what a print
 * layout never needs: WebAssembly memory is not counted against the isolate's memory limit, and
 * Atomics.waitAsync schedules work outside the time limit. Everything the template does, its
 * errors included, is turned into one string inside the isolate ("H" html, "E" error, "L" too
 * large): isolated-vm reads a thrown object's message on its own, outside the time limit, so a
 * getter that loops would hang the render for ever.
 */
const RUNNER = `(function (global) {
  var job = global.__renderJob
  delete global.__renderJob
  var body = job.body, data = job.data, maxChars = job.maxChars
  var makeFunction = Function, apply = Reflect.apply, slice = String.prototype.slice
  var removed = ['WebAssembly', 'Atomics', 'SharedArrayBuffer', 'FinalizationRegistry', 'WeakRef']
  for (var i = 0; i < removed.length; i++) delete global[removed[i]]
  function describe(error) {
    try {
      var message = error !== null && (typeof error === 'object' || typeof error === 'function') ? error.message : undefined
      var text = message === undefined ? '' + error : '' + message
      return text.length > 4000 ? apply(slice, text, [0, 4000]) : text
    } catch (_) {
      return 'the template threw a value that cannot be shown'
    }
  }
  try {
    var html = '' + makeFunction(body)()(data)
    return html.length > maxChars ? 'L' : 'H' + html
  } catch (error) {
    return 'E' + describe(error)
  }
})(globalThis)`

export async function runInIsolate(
  input: ivm.ExternalCopy<unknown>,
  limits: IsolateLimits,
  onCatastrophicError: (message: string) => void,
): Promise<string> {
  const isolate = new ivm.Isolate({ memoryLimit: limits.memoryMb, onCatastrophicError })
  try {
    const context = await isolate.createContext()
    await context.global.set('__renderJob', input.copyInto({ release: true }))
    const script = await isolate.compileScript(RUNNER, { filename: 'template-runner.js' })
    const result: unknown = await script.run(context, { timeout: limits.timeoutMs })
    return decode(result, limits.maxOutputBytes)
  } catch (error) {
    throw toRenderError(error, isolate, limits)
  } finally {
    if (!isolate.isDisposed) isolate.dispose()
  }
}

/**
 * Data goes in as a structured-clone copy, never as a reference to a host object. The copy lives
 * outside this process's heap; decoding and copying are synchronous, so however many renders run,
 * the process holds one request's decoded data at a time. Decoding may fail (data nested too deep
 * for the stack): that fails this render only.
 */
export function copyInput(body: string, data: Uint8Array, maxChars: number): ivm.ExternalCopy<unknown> {
  try {
    return new ivm.ExternalCopy({ body, data: deserialize(data), maxChars })
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error)
    throw renderError('RENDER_FAILED', `the render data cannot be copied into the sandbox: ${reason}`)
  }
}

function decode(result: unknown, maxOutputBytes: number): string {
  if (typeof result !== 'string' || result.length === 0) throw renderError('RENDER_FAILED', 'the template failed')
  const kind = result[0]
  const rest = result.slice(1)
  if (kind === 'E') throw renderError('RENDER_FAILED', rest)
  if (kind === 'L' || Buffer.byteLength(rest, 'utf8') > maxOutputBytes) throw tooLarge(maxOutputBytes)
  return rest
}

function tooLarge(maxOutputBytes: number) {
  return renderError('RENDER_OUTPUT_TOO_LARGE', `the rendered output exceeds the limit of ${maxOutputBytes} bytes`)
}

/** Only isolated-vm's own errors reach this point; template errors come back as "E" strings. */
function toRenderError(error: unknown, isolate: ivm.Isolate, limits: IsolateLimits) {
  if (error instanceof RenderError) return error
  const message = error instanceof Error ? error.message : ''
  const [code, text]: [RenderErrorCode, string] = /timed out/i.test(message)
    ? ['RENDER_TIMEOUT', `the template exceeded the time limit of ${limits.timeoutMs} ms`]
    : /memory limit/i.test(message) || isolate.isDisposed
      ? ['RENDER_MEMORY_LIMIT', `the template exceeded the memory limit of ${limits.memoryMb} MB`]
      : message === 'Not supported'
        ? ['RENDER_FAILED', 'the template used a feature print layouts do not have, such as import()']
        : ['RENDER_FAILED', 'the template could not be run']
  return renderError(code, text)
}
