/**
 * The engine's WebAssembly module, changed to start on the smallest memory it can run on.
 *
 * As built, the engine asks for a memory of at least 16 MB (emscripten's INITIAL_MEMORY), of which
 * its static data and its 5 MB stack take the first 5.1 MB, and its heap starts there; when the
 * heap passes the memory's end, its allocator (sbrk) asks the host to grow the memory, by 5-20 %
 * at a time. Starting the memory at the end of the stack changes nothing the engine sees but the
 * size it starts at; what it buys is a small bound that no code inside can move: the engine can
 * read or write only below its memory's current size (WebAssembly checks every access), so a
 * memory used again has to be wiped only that far, and is resident only that far: 8 MB, the size
 * every render starts on (sandbox-memory.ts). The wipe covers the size whatever this module asked
 * for: its safety does not rest on this file.
 *
 * Only the memory import's minimum is rewritten, in place and in as many bytes as before. Anything
 * in the module this does not expect leaves it as it is, at 16 MB: the sandbox is then as before,
 * larger but not less safe; a test says so. If the stack's top were read wrong (too low), the
 * engine would trap at its first call and every render fail: loud, never a silent leak.
 */
const PAGE = 64 * 1024
const SECTION_IMPORT = 2
const SECTION_GLOBAL = 6
const SECTION_DATA = 11
const KIND_FUNCTION = 0
const KIND_TABLE = 1
const KIND_MEMORY = 2
const KIND_GLOBAL = 3
const HEADER = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]
const I32 = 0x7f
const I32_CONST = 0x41
const END = 0x0b

export interface EngineStart {
  bytes: Uint8Array
  /** Pages the memory must have at least when the engine is instantiated on it; undefined: as built. */
  pages: number | undefined
}

class Reader {
  offset = 0
  constructor(readonly bytes: Uint8Array) {}
  byte(): number {
    if (this.offset >= this.bytes.length) throw new Error('past the end')
    return this.bytes[this.offset++] as number
  }
  unsigned(): number {
    let result = 0
    let shift = 0
    for (;;) {
      const byte = this.byte()
      result += (byte & 0x7f) * 2 ** shift
      shift += 7
      if ((byte & 0x80) === 0) return result
      if (shift > 35) throw new Error('a LEB128 too long')
    }
  }
  signed(): number {
    let result = 0
    let shift = 0
    let byte: number
    do {
      byte = this.byte()
      result += (byte & 0x7f) * 2 ** shift
      shift += 7
      if (shift > 35) throw new Error('a LEB128 too long')
    } while (byte & 0x80)
    return byte & 0x40 ? result - 2 ** shift : result
  }
  skip(count: number): void {
    this.offset += count
  }
  /** `i32.const N end`, the only constant expression this needs to read; else undefined. */
  i32Constant(): number | undefined {
    if (this.byte() !== I32_CONST) return undefined
    const value = this.signed()
    return this.byte() === END ? value : undefined
  }
}

interface Layout {
  /** Where the memory import's minimum is written, and in how many bytes. */
  minimumAt: number
  minimumBytes: number
  minimum: number
  /** The highest address the module puts anything at before it runs: data, and the stack's top. */
  highest: number
}

function readLayout(bytes: Uint8Array): Layout | undefined {
  if (HEADER.some((byte, i) => bytes[i] !== byte)) return undefined
  const reader = new Reader(bytes)
  reader.skip(HEADER.length)
  let memory: Omit<Layout, 'highest'> | undefined
  let highest = 0
  while (reader.offset < bytes.length) {
    const id = reader.byte()
    const size = reader.unsigned()
    const end = reader.offset + size
    if (id === SECTION_IMPORT) memory = readMemoryImport(reader)
    else if (id === SECTION_GLOBAL) {
      const top = readHighestGlobal(reader)
      if (top === undefined) return undefined
      highest = Math.max(highest, top)
    } else if (id === SECTION_DATA) {
      const top = readDataEnd(reader)
      if (top === undefined) return undefined
      highest = Math.max(highest, top)
    }
    // A section read is read to its end exactly, or it was not understood (a newer format): then
    // nothing is rewritten, lest a misread offset change some other byte.
    const parsed = id === SECTION_IMPORT || id === SECTION_GLOBAL || id === SECTION_DATA
    if (parsed && reader.offset !== end) return undefined
    reader.offset = end
  }
  return memory && { ...memory, highest }
}

function readMemoryImport(reader: Reader): Omit<Layout, 'highest'> | undefined {
  let found: Omit<Layout, 'highest'> | undefined
  const count = reader.unsigned()
  for (let i = 0; i < count; i++) {
    reader.skip(reader.unsigned()) // module name
    reader.skip(reader.unsigned()) // field name
    const kind = reader.byte()
    if (kind === KIND_FUNCTION) reader.unsigned()
    else if (kind === KIND_GLOBAL) reader.skip(2)
    else if (kind === KIND_TABLE || kind === KIND_MEMORY) {
      if (kind === KIND_TABLE) reader.byte()
      const flags = reader.byte()
      // Shared or 64-bit memories (other flags) are not this engine's.
      if (flags !== 0 && flags !== 1) return undefined
      const minimumAt = reader.offset
      const minimum = reader.unsigned()
      const minimumBytes = reader.offset - minimumAt
      if (flags === 1) reader.unsigned()
      if (kind === KIND_MEMORY) {
        if (found) return undefined
        found = { minimumAt, minimumBytes, minimum }
      }
    } else return undefined
  }
  return found
}

/** The largest initial value of a mutable i32 global: the stack pointer's, where the stack starts. */
function readHighestGlobal(reader: Reader): number | undefined {
  let highest = 0
  const count = reader.unsigned()
  for (let i = 0; i < count; i++) {
    const type = reader.byte()
    const mutable = reader.byte() === 1
    if (type !== I32) return undefined
    const value = reader.i32Constant()
    if (value === undefined) return undefined
    if (mutable) highest = Math.max(highest, value >>> 0)
  }
  return highest
}

/** Where the last active data segment ends. */
function readDataEnd(reader: Reader): number | undefined {
  let highest = 0
  const count = reader.unsigned()
  for (let i = 0; i < count; i++) {
    const flags = reader.unsigned()
    if (flags === 1) {
      reader.skip(reader.unsigned())
      continue
    }
    if (flags === 2 && reader.unsigned() !== 0) return undefined
    if (flags !== 0 && flags !== 2) return undefined
    const offset = reader.i32Constant()
    if (offset === undefined) return undefined
    const length = reader.unsigned()
    reader.skip(length)
    highest = Math.max(highest, (offset >>> 0) + length)
  }
  return highest
}

/** `value` as an unsigned LEB128 of exactly `length` bytes (padded: the format allows it). */
function writePadded(target: Uint8Array, at: number, length: number, value: number): void {
  let rest = value
  for (let i = 0; i < length; i++) {
    const last = i === length - 1
    target[at + i] = (rest & 0x7f) | (last ? 0 : 0x80)
    rest = Math.floor(rest / 128)
  }
}

/**
 * The module, asking for the fewest pages that hold its data and its stack; or as it was (with the
 * pages it asks for), when it is not laid out as expected.
 */
export function startSmall(module: Uint8Array): EngineStart {
  let layout: Layout | undefined
  try {
    layout = readLayout(module)
  } catch {
    layout = undefined
  }
  if (!layout) return { bytes: module, pages: undefined }
  const pages = Math.max(1, Math.ceil(layout.highest / PAGE))
  if (pages >= layout.minimum || pages >= 128 ** layout.minimumBytes) return { bytes: module, pages: layout.minimum }
  const bytes = new Uint8Array(module)
  writePadded(bytes, layout.minimumAt, layout.minimumBytes, pages)
  return { bytes, pages }
}
