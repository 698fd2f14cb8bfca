import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import t from 'tap'
import { startSmall } from '../../render/engine-start.js'
import { ENGINE_MEMORY_MB } from '../../render/sandbox-memory.js'

const PAGE = 64 * 1024

/** The bytes of a name or a list's length, as the format writes them. */
function name(text: string): number[] {
  return [text.length, ...Buffer.from(text)]
}

function section(id: number, body: number[]): number[] {
  return [id, body.length, ...body]
}

/**
 * A module laid out as emscripten lays out the engine: a memory imported with a minimum of 256
 * pages (16 MB, minimum written in two bytes), a stack pointer starting at `stackTop` and data up
 * to `dataEnd`.
 */
function module(stackTop: number, dataEnd: number): Uint8Array {
  const i32 = (value: number) => {
    const bytes: number[] = []
    let rest = value
    for (;;) {
      const byte = rest & 0x7f
      rest >>= 7
      const done = (rest === 0 && (byte & 0x40) === 0) || (rest === -1 && (byte & 0x40) !== 0)
      bytes.push(done ? byte : byte | 0x80)
      if (done) return bytes
    }
  }
  const data = [1, 0, 0x41, ...i32(dataEnd - 4), 0x0b, 4, 1, 2, 3, 4]
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(2, [1, ...name('a'), ...name('a'), 2, 1, 0x80, 0x02, 0x80, 0x80, 0x02]),
    ...section(6, [1, 0x7f, 1, 0x41, ...i32(stackTop), 0x0b]),
    ...section(11, data),
  ])
}

function instantiates(bytes: Uint8Array, pages: number): boolean {
  try {
    // The cast as in render/quickjs.ts: the DOM's types take no Uint8Array of any buffer.
    new WebAssembly.Instance(new WebAssembly.Module(bytes as Uint8Array<ArrayBuffer>), {
      a: { a: new WebAssembly.Memory({ initial: pages, maximum: 32_768 }) },
    })
    return true
  } catch {
    return false
  }
}

t.test('the module asks for the pages that hold its stack and data, and V8 holds it to that', async (t) => {
  const original = module(5 * PAGE + 100, 3 * PAGE)
  t.notOk(instantiates(original, 6), 'as built, 6 pages are refused: it asks for 256')
  const start = startSmall(original)
  t.equal(start.pages, 6, 'the stack ends 100 bytes into the sixth page')
  t.ok(instantiates(start.bytes, 6), '6 pages are taken')
  t.notOk(instantiates(start.bytes, 5), '5 are not')
  t.equal(start.bytes.length, original.length, 'rewritten in place')
  t.not(start.bytes, original, 'on a copy')
  t.equal(original[original.indexOf(0x80, 8)], 0x80, 'the original untouched')

  const dataHigher = startSmall(module(PAGE, 7 * PAGE + 1))
  t.equal(dataHigher.pages, 8, 'data past the stack counts too')
  t.ok(instantiates(dataHigher.bytes, 8))
})

t.test('a module not laid out as expected is left as it is', async (t) => {
  const original = module(5 * PAGE, PAGE)
  for (const [what, bytes] of [
    ['cut short', original.subarray(0, 20)],
    ['not WebAssembly at all', new Uint8Array(64).fill(0xff)],
    ['no memory import', new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00])],
  ] as const) {
    const start = startSmall(bytes)
    t.equal(start.bytes, bytes, `${what}: the same bytes`)
    t.equal(start.pages, undefined, `${what}: the size it was built for`)
  }
  const needsAll = module(300 * PAGE, PAGE)
  t.same(startSmall(needsAll), { bytes: needsAll, pages: 256 }, 'a stack past 16 MB: as it was')
})

t.test('the engine itself starts on about a third of its 16 MB', async (t) => {
  const path = createRequire(import.meta.url).resolve('@jitl/quickjs-wasmfile-release-sync/wasm')
  const start = startSmall(readFileSync(path))
  // A new engine build that this cannot read would start on 16 MB again: safe, but no longer small.
  t.ok(start.pages !== undefined && start.pages * PAGE < (ENGINE_MEMORY_MB * 1024 * 1024) / 2, `${start.pages} pages`)
})
