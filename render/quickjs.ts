/**
 * Runs a compiled template body in QuickJS compiled to WebAssembly (quickjs-emscripten), a
 * JavaScript engine of its own inside a WebAssembly instance of its own: the layout's objects,
 * functions and memory are not the host's, and the host gives it nothing to call. Each render
 * gets a new instance on all-zero memory (a new memory, or the last one wiped: sandbox-memory.ts),
 * so nothing of one render, not even freed memory of the engine's heap, is there for the next.
 * Only text crosses: the body, the data as JSON, and the HTML (or an error) back.
 *
 * Limits: time by the engine's interrupt handler (a deadline checked while the layout runs,
 * regular expressions included); memory by the instance's WebAssembly memory, whose maximum the
 * engine cannot grow past (sandbox-memory.ts); output by length inside, then by UTF-8 bytes here.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import release from '@jitl/quickjs-wasmfile-release-sync'
import { newQuickJSWASMModuleFromVariant, newVariant, type QuickJSContext } from 'quickjs-emscripten-core'
import { assetBytes, executableManifest, insideExecutable } from '../lib/executable.js'
import { startSmall } from './engine-start.js'
import { RenderError, renderError } from './errors.js'
import type { SandboxLimits } from './protocol.js'
import type { EncodedData } from './render-data.js'
import { DATE_TAG } from './render-data.js'
import { type SandboxMemory, sandboxMemory } from './sandbox-memory.js'

type SyncVariant = Extract<Parameters<typeof newQuickJSWASMModuleFromVariant>[0], { type: 'sync' }>
// The package's types describe its CommonJS build; imported as ESM, its default export is the variant.
const variant = release as unknown as SyncVariant
const MB = 1024 * 1024
/** Kept well inside the WebAssembly stack (5 MB) and the worker's native stack (render-pool.ts). */
const MAX_STACK_BYTES = 1024 * 1024

interface Engine {
  module: WebAssembly.Module
  /** The memory it needs at least (engine-start.ts); undefined: the 16 MB it was built for. */
  pages: number | undefined
}

let compiled: Engine | undefined

/** The engine's WebAssembly: the package's file, or inside the single executable its copy there. */
function engineBytes(): Uint8Array {
  if (insideExecutable()) return assetBytes(executableManifest().quickjs)
  return readFileSync(createRequire(import.meta.url).resolve('@jitl/quickjs-wasmfile-release-sync/wasm'))
}

/**
 * Compiling the engine takes milliseconds, so it is done once per worker; instances are per render.
 * It is compiled to start on the smallest memory it can run on, which bounds what a worker keeps
 * between renders (sandbox-memory.ts).
 */
function engineModule(): Engine {
  if (compiled) return compiled
  const bytes = engineBytes()
  const start = startSmall(bytes)
  // The cast: with the DOM's types in the program too (fhirclient's), a Buffer is not taken for a BufferSource.
  const compile = (wasm: Uint8Array) => new WebAssembly.Module(wasm as Uint8Array<ArrayBuffer>)
  try {
    compiled = { module: compile(start.bytes), pages: start.pages }
  } catch (error) {
    // A rewrite the engine's validator refuses: the module as built, on its 16 MB (larger, as safe).
    if (start.bytes === bytes) throw error
    compiled = { module: compile(bytes), pages: undefined }
  }
  return compiled
}

/**
 * Runs inside the sandbox before any template code, so it holds the intrinsics it needs and
 * removes what a print layout never uses. Every outcome, errors included, comes back as one
 * string ("H" html, "E" error, "L" too large, "M" out of memory, "D" data unreadable): reading a
 * thrown object from outside would run its getters outside the time limit. Strings cross the
 * boundary as JSON both ways, because the engine's string interface stops at the first NUL
 * character and cannot carry a lone surrogate.
 */
const RUNNER = `(function (input, dates, maxChars) {
  var makeFunction = Function, parse = JSON.parse, stringify = JSON.stringify
  var apply = Reflect.apply, slice = String.prototype.slice
  var keys = Object.keys, OutOfMemory = InternalError, global = globalThis
  var removed = ['SharedArrayBuffer', 'Atomics', 'FinalizationRegistry', 'WeakRef', 'WebAssembly']
  for (var i = 0; i < removed.length; i++) delete global[removed[i]]
  // pug and ejs add the template line in front of the engine's message and rethrow the same error.
  function isOutOfMemory(error) {
    return error instanceof OutOfMemory && /out of memory$/.test(error.message)
  }
  function describe(error) {
    try {
      var message = error !== null && (typeof error === 'object' || typeof error === 'function') ? error.message : undefined
      var text = message === undefined ? '' + error : '' + message
      return text.length > 4000 ? apply(slice, text, [0, 4000]) : text
    } catch (_) {
      return 'the template threw a value that cannot be shown'
    }
  }
  var dateTag = ${JSON.stringify(DATE_TAG)}
  function revive(key, value) {
    if (value === null || typeof value !== 'object' || typeof value[dateTag] !== 'number') return value
    return keys(value).length === 1 ? new Date(value[dateTag]) : value
  }
  function run() {
    var job
    try {
      job = parse(input, dates ? revive : undefined)
    } catch (error) {
      return isOutOfMemory(error) ? 'M' : 'D' + describe(error)
    }
    try {
      var html = '' + makeFunction(job.body)()(job.data)
      return html.length > maxChars ? 'L' : 'H' + html
    } catch (error) {
      return isOutOfMemory(error) ? 'M' : 'E' + describe(error)
    }
  }
  return stringify(run())
})`

export async function warmUp(): Promise<void> {
  await runInQuickJS('return function () { return "" }', { json: '{}', dates: false }, WARM_UP_LIMITS)
}

const WARM_UP_LIMITS: SandboxLimits = { timeoutMs: 60_000, memoryMb: 8, maxOutputBytes: 1024 }

export async function runInQuickJS(body: string, data: EncodedData, limits: SandboxLimits): Promise<string> {
  const { module, pages } = engineModule()
  const memory = sandboxMemory(limits.memoryMb, pages)
  try {
    return await renderOn(memory, module, body, data, limits)
  } finally {
    // However the render ended: its instance is dropped, no code of it runs again.
    memory.release()
  }
}

async function renderOn(
  memory: SandboxMemory,
  module: WebAssembly.Module,
  body: string,
  data: EncodedData,
  limits: SandboxLimits,
): Promise<string> {
  const engine = await newQuickJSWASMModuleFromVariant(
    newVariant(variant, { wasmModule: module, wasmMemory: memory.memory }),
  )
  const runtime = engine.newRuntime()
  runtime.setMemoryLimit(limits.memoryMb * MB)
  runtime.setMaxStackSize(MAX_STACK_BYTES)
  let timedOut = false
  let deadline = Number.POSITIVE_INFINITY
  runtime.setInterruptHandler(() => {
    if (performance.now() > deadline) timedOut = true
    return timedOut
  })
  const context = runtime.newContext()
  // Nothing is disposed: the whole instance is dropped after the render, which frees it at once,
  // and an engine stopped mid-way (interrupted, out of memory) may not be in a state to free parts.
  let outcome: string
  try {
    const runner = context.unwrapResult(context.evalCode(RUNNER, 'template-runner.js'))
    // The data is JSON already: it goes in as it is, beside the body.
    const input = context.newString(`{"body":${JSON.stringify(body)},"data":${data.json}}`)
    const args = [input, context.newNumber(data.dates ? 1 : 0), context.newNumber(limits.maxOutputBytes)]
    deadline = performance.now() + limits.timeoutMs
    const result = context.callFunction(runner, context.undefined, ...args)
    // Promise callbacks a layout left behind run now, within the same deadline.
    if (!result.error && !timedOut) runtime.executePendingJobs(-1)
    if (timedOut) throw timeout(limits)
    outcome = result.error ? escapedError(context, result.error) : JSON.parse(context.getString(result.value))
  } catch (error) {
    if (timedOut) throw timeout(limits)
    if (error instanceof RenderError) throw error
    // The engine trapped (out of memory it sometimes misses its own failed allocation and reads
    // past its memory; the WebAssembly bounds check stops it there) or the host's stack ran out
    // inside it. The instance is dropped either way; this render only fails.
    if (memory.exhausted) throw memoryLimit(limits)
    throw renderError('RENDER_FAILED', 'the template could not be run')
  }
  // A layout that ran out of memory may fail in any way (even `null` is thrown when the engine
  // cannot make an error object); a refused growth says which.
  if (memory.exhausted && outcome[0] !== 'H' && outcome[0] !== 'L') outcome = 'M'
  return decode(outcome, limits)
}

/** Only the engine's own errors get past the runner: out of memory or stack while handling one. */
function escapedError(context: QuickJSContext, error: Parameters<QuickJSContext['getString']>[0]): string {
  let message = ''
  try {
    message = context.getString(context.getProp(error, 'message'))
  } catch {}
  return message === 'out of memory' || message === '' ? 'M' : `E${message}`
}

function decode(outcome: string, limits: SandboxLimits): string {
  const kind = outcome[0]
  const rest = outcome.slice(1)
  if (kind === 'H' && Buffer.byteLength(rest, 'utf8') <= limits.maxOutputBytes) return rest
  if (kind === 'H' || kind === 'L') {
    throw renderError(
      'RENDER_OUTPUT_TOO_LARGE',
      `the rendered output exceeds the limit of ${limits.maxOutputBytes} bytes`,
    )
  }
  if (kind === 'M') throw memoryLimit(limits)
  if (kind === 'D') throw renderError('RENDER_FAILED', `the render data cannot be copied into the sandbox: ${rest}`)
  if (kind === 'E') throw renderError('RENDER_FAILED', rest)
  throw renderError('RENDER_FAILED', 'the template failed')
}

function memoryLimit(limits: SandboxLimits) {
  return renderError('RENDER_MEMORY_LIMIT', `the template exceeded the memory limit of ${limits.memoryMb} MB`)
}

function timeout(limits: SandboxLimits) {
  return renderError('RENDER_TIMEOUT', `the template exceeded the time limit of ${limits.timeoutMs} ms`)
}
