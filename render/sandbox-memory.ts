/**
 * The WebAssembly memory a render's engine runs on (quickjs.ts). Its maximum is the memory limit:
 * the engine cannot grow past it, whatever it allocates. QuickJS's own malloc limit is set too,
 * but in this build it counts only single allocations (it cannot see block sizes), so many small
 * ones would pass it; the memory's maximum stops them.
 */
const MB = 1024 * 1024
const PAGE = 64 * 1024
/** The engine's own memory (static data and its 5 MB stack) as built; the layout's limit comes on top. */
export const ENGINE_MEMORY_MB = 16
const ENGINE_PAGES = ENGINE_MEMORY_MB * (MB / PAGE)

export interface SandboxMemory {
  memory: WebAssembly.Memory
  /** Whether the engine's last try to grow the memory was refused: it ran out. */
  readonly exhausted: boolean
}

interface Kept {
  memory: WebAssembly.Memory
  memoryMb: number
  startPages: number
  refused: boolean
}

let kept: Kept | undefined

function create(memoryMb: number, startPages: number): Kept {
  const memory = new WebAssembly.Memory({ initial: startPages, maximum: ENGINE_PAGES + memoryMb * (MB / PAGE) })
  const entry: Kept = { memory, memoryMb, startPages, refused: false }
  // The engine grows its memory through this object's grow() and takes a refusal as "no memory".
  const grow = memory.grow.bind(memory)
  memory.grow = (pages: number) => {
    try {
      const previous = grow(pages)
      entry.refused = false
      return previous
    } catch (error) {
      entry.refused = true
      throw error
    }
  }
  return entry
}

const CHUNK = 64 * 1024
const OS_PAGE = 4096
const ZERO_CHUNK = Buffer.alloc(CHUNK)

/**
 * Sets every byte of `bytes` to zero, writing only to the parts that are not zero already, so a
 * page no render wrote stays as the kernel gave it. Reading it is not free everywhere: a kernel
 * that maps its shared zero page on a read keeps it at no cost, but some give every page read a
 * page of its own (this project's measuring machine does, even for a C program reading fresh
 * anonymous memory), so the wipe reads the whole memory, and a memory used again is resident up
 * to its size. That size, not the pages a render touched, is what a worker keeps; hence the
 * engine starts on the smallest memory it can (engine-start.ts). Pages are zeroed one by one
 * inside a dirty chunk. `zeroPage` is what writes; the tests pass one that records the pages.
 */
export function wipe(bytes: Uint8Array, zeroPage: (page: Buffer) => void = zeroFill): void {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  for (let chunk = 0; chunk < buffer.length; chunk += CHUNK) {
    const part = buffer.subarray(chunk, chunk + CHUNK)
    if (isZero(part)) continue
    for (let page = 0; page < part.length; page += OS_PAGE) {
      const slice = part.subarray(page, page + OS_PAGE)
      if (!isZero(slice)) zeroPage(slice)
    }
  }
}

function zeroFill(page: Buffer): void {
  page.fill(0)
}

function isZero(part: Buffer): boolean {
  return ZERO_CHUNK.subarray(0, part.length).equals(part)
}

/**
 * Memory for one render, all zero, of `startPages` pages or more. The previous render's memory is
 * wiped and used again when it has the same limit and has not grown past the engine's 16 MB: a
 * new instance on all-zero memory is exactly a new instance on new memory (one that starts larger,
 * which changes nothing but when the engine first grows it). Safe because an instance calls
 * nothing later: once its render has returned, no code of it runs again.
 *
 * Why the wipe covers the memory's current size and nothing beyond or less: every load and store
 * of the engine, and every write of quickjs-emscripten's glue (views on this same buffer), is
 * bounds-checked by WebAssembly against that size, so no byte at or past it was ever written; and
 * the size only grows, so it is the highest extent any render on this memory reached. Where the
 * engine's allocator or stack stood is not used as the bound: they are values inside the memory,
 * which a layout that broke QuickJS could change.
 *
 * Why reuse rather than a new memory per render: a new memory's pages are each faulted in by the
 * kernel on first touch (about 13 µs a page on the measuring machine, 1.1 ms for a typical
 * render's 85) and dropped memories are freed only by the garbage collector, which V8 runs early
 * for them (a full collection every four or five renders): renders took 25-60 % longer.
 * A memory that grew past 16 MB is dropped, so between renders a worker keeps at most the 16 MB
 * it always kept, and about 6 MB for a typical print.
 */
export function sandboxMemory(memoryMb: number, startPages = ENGINE_PAGES): SandboxMemory {
  const reusable =
    kept?.memoryMb === memoryMb &&
    kept.startPages === startPages &&
    kept.memory.buffer.byteLength <= ENGINE_MEMORY_MB * MB
  if (reusable && kept) wipe(new Uint8Array(kept.memory.buffer))
  else kept = create(memoryMb, startPages)
  const entry = kept
  entry.refused = false
  return {
    memory: entry.memory,
    get exhausted() {
      return entry.refused
    },
  }
}
