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

/**
 * Every render's memory starts on at least this much (8 MB): a typical print's engine (5.1 MB of
 * data and stack, then its heap) never grows it, and a memory that grew is never used again, so
 * every render starts on the same size whatever the renders before it did. A size left over from
 * an earlier print would tell a layout how much that print needed (where the engine's growth stops,
 * how soon its allocations need a grow): another facility's print, not this one's to know.
 */
export const REUSED_MEMORY_MB = 8
const REUSED_PAGES = REUSED_MEMORY_MB * (MB / PAGE)

export interface SandboxMemory {
  memory: WebAssembly.Memory
  /** Whether the engine's last try to grow the memory was refused: it ran out. */
  readonly exhausted: boolean
  /** The render is over (however it ended): the memory may be wiped and used by the next. */
  release(): void
}

interface Kept {
  memory: WebAssembly.Memory
  memoryMb: number
  pages: number
  refused: boolean
  /** A render runs on it: a second caller gets a memory of its own, never this one. */
  inUse: boolean
}

let kept: Kept | undefined

/** The pages every render with this engine starts on. */
const initialPages = (startPages: number) => Math.max(startPages, REUSED_PAGES)

function create(memoryMb: number, startPages: number): Kept {
  const pages = initialPages(startPages)
  const memory = new WebAssembly.Memory({ initial: pages, maximum: ENGINE_PAGES + memoryMb * (MB / PAGE) })
  const entry: Kept = { memory, memoryMb, pages, refused: false, inUse: false }
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
 * Memory for one render, all zero, of `initialPages(startPages)` pages exactly. The previous
 * render's memory is wiped and used again when it has the same limit, is not in use and never grew:
 * a new instance on all-zero memory of the same size is exactly a new instance on new memory. Safe
 * because an instance calls nothing later: once its render has returned, no code of it runs again.
 * A memory that grew is dropped (the next render gets a new one), so between renders a worker keeps
 * 8 MB, and only the size every render starts on is ever seen by the next.
 *
 * Why the wipe covers the memory's whole size: every load and store of the engine, and every write
 * of quickjs-emscripten's glue (views on this same buffer), is bounds-checked by WebAssembly against
 * that size, so no byte past it was ever written. Where the engine's allocator or stack stood is
 * not used as the bound: they are values inside the memory, which a layout that broke QuickJS could
 * change.
 *
 * Why reuse rather than a new memory per render: a new memory's pages are each faulted in by the
 * kernel on first touch (about 13 µs a page on the measuring machine, 1.1 ms for a typical
 * render's 85) and dropped memories are freed only by the garbage collector, which V8 runs early
 * for them (a full collection every four or five renders): renders took 25-60 % longer.
 */
export function sandboxMemory(memoryMb: number, startPages = ENGINE_PAGES): SandboxMemory {
  const previous = kept
  const reusable =
    previous !== undefined &&
    !previous.inUse &&
    previous.memoryMb === memoryMb &&
    previous.pages === initialPages(startPages) &&
    previous.memory.buffer.byteLength === previous.pages * PAGE
  let entry: Kept
  if (reusable) {
    entry = previous
    wipe(new Uint8Array(entry.memory.buffer))
  } else {
    entry = create(memoryMb, startPages)
    // One in use stays someone else's; it is not kept past its render if it grew (checked above).
    if (!previous?.inUse) kept = entry
  }
  entry.refused = false
  entry.inUse = true
  return {
    memory: entry.memory,
    get exhausted() {
      return entry.refused
    },
    release() {
      entry.inUse = false
    },
  }
}
