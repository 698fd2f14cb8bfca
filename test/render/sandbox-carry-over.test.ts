import t from 'tap'
import { runInQuickJS } from '../../render/quickjs.js'
import { encodeData } from '../../render/render-data.js'
import { REUSED_MEMORY_MB } from '../../render/sandbox-memory.js'
import { watchInstances, watchMemories } from './wasm-memories.js'

/**
 * Nothing of one render is there for the next, not even memory the engine freed: checked on the
 * memory itself, read in full by the test (not by the code under test), at the moment the next
 * render's engine is made on it and again after that render. A print worker uses its memory again
 * after a wipe (render/sandbox-memory.ts); these run the same function in this process, each case
 * with a limit of its own so that its first render starts on a new memory.
 *
 * Seen red, in the cases whose memory is used again (a render that threw or timed out among
 * them): with the wipe skipped, with the wipe stopped at the 5.1 MB the engine's data and stack
 * take (its heap, and the secret, lie past them), and with the memory released only after a render
 * that returned. A memory that grew is dropped instead, so every render starts on the same size.
 */

const MB = 1024 * 1024
const SECRET = 'PATIENT-4711-SECRET-DIAGNOSIS'
const LIMITS = { timeoutMs: 60_000, maxOutputBytes: 1024 }

/**
 * Builds a string of the secret over and over, as one block, then drops it: freed engine memory.
 * `end`: how the render ends, returning (its length), throwing, or looping into its time limit.
 */
function hoarder(bytes: number, end: 'return' | 'throw' | 'loop' = 'return'): string {
  const ending = {
    return: "return 'wrote ' + length",
    throw: "throw new Error('failed ' + length)",
    loop: 'for (;;) {}',
  }
  return `return function (data) {
    var piece = (data.secret + '|').repeat(1000), parts = []
    for (var i = 0; i * piece.length < ${bytes}; i++) parts.push(piece)
    var text = parts.join('')
    var length = text.length
    parts = null
    text = null
    ${ending[end]}
  }`
}

const CASES = [
  { name: 'a small page', bytes: 64 * 1024, memoryMb: 29, end: 'return', outcome: /^wrote \d+$/ },
  {
    name: '512 KB, in the heap past the data and stack',
    bytes: 512 * 1024,
    memoryMb: 28,
    end: 'return',
    outcome: /^wrote/,
  },
  { name: '2.5 MB', bytes: 2.5 * MB, memoryMb: 30, end: 'return', outcome: /^wrote/ },
  { name: '8 MB, a memory that grew', bytes: 8 * MB, memoryMb: 31, end: 'return', outcome: /^wrote/ },
  { name: 'a render that threw', bytes: 64 * 1024, memoryMb: 27, end: 'throw', outcome: /failed \d+/ },
  { name: 'a render stopped at its time limit', bytes: 64 * 1024, memoryMb: 26, end: 'loop', outcome: /time/ },
] as const

function occurrences(memory: WebAssembly.Memory, text: string): number[] {
  const bytes = Buffer.from(memory.buffer)
  const found: number[] = []
  for (let at = bytes.indexOf(text, 0, 'latin1'); at >= 0; at = bytes.indexOf(text, at + 1, 'latin1')) found.push(at)
  return found
}

/** The render's answer, or the message of the error it failed with. */
async function outcomeOf(render: Promise<string>): Promise<string> {
  try {
    return await render
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
}

for (const { name, bytes, memoryMb, end, outcome } of CASES) {
  t.test(`${name}: the next render's memory holds nothing of it`, async (t) => {
    const memories = watchMemories(t)
    const instances = watchInstances(t)
    const limits = { ...LIMITS, memoryMb, ...(end === 'loop' ? { timeoutMs: 300 } : {}) }
    const first = await outcomeOf(runInQuickJS(hoarder(bytes, end), encodeData({ secret: SECRET }), limits))
    t.match(first, outcome)
    t.equal(memories.length, 1, 'the first render ran on a memory of its own')
    const used = memories[0]?.memory as WebAssembly.Memory
    const left = occurrences(used, SECRET)
    // Without these the test would prove nothing: the secret is there, freed, when the render is over.
    t.ok(left.length > 10, `the first render left the secret in memory ${left.length} times`)
    const start = instances[0]?.bytes ?? 0
    if (bytes > MB) t.ok((left.at(-1) ?? 0) >= start, 'some of it past the size the memory started with')

    t.equal(await runInQuickJS("return function () { return 'next' }", encodeData({}), limits), 'next')
    t.equal(instances.length, 2, 'two engines were made')
    const next = instances[1] as (typeof instances)[number]
    const kept = used.buffer.byteLength === REUSED_MEMORY_MB * MB
    t.equal(next.memory === used, kept, kept ? 'the memory was used again' : 'a memory that grew was not')
    t.equal(next.bytes, REUSED_MEMORY_MB * MB, 'the next render starts on the same size as every render')
    t.equal(next.firstNonZero, -1, `all ${next.bytes} bytes were zero when the next engine was made on them`)
    t.same(occurrences(next.memory, SECRET), [], 'and after the next render, no trace of the secret')
  })
}
