/**
 * The WebAssembly memory a render's engine runs on (quickjs.ts). Its maximum is the memory limit:
 * the engine cannot grow past it, whatever it allocates. QuickJS's own malloc limit is set too,
 * but in this build it counts only single allocations (it cannot see block sizes), so many small
 * ones would pass it; the memory's maximum stops them.
 */
const MB = 1024 * 1024
const PAGE = 64 * 1024
/** The engine's own memory (static data and its 5 MB stack); the layout's limit comes on top. */
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
  refused: boolean
}

let kept: Kept | undefined

function create(memoryMb: number): Kept {
  const memory = new WebAssembly.Memory({ initial: ENGINE_PAGES, maximum: ENGINE_PAGES + memoryMb * (MB / PAGE) })
  const entry: Kept = { memory, memoryMb, refused: false }
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
 * Sets every byte of `bytes` to zero, writing only to the parts that are not zero already. A
 * render touches a few hundred KB of the engine's 16 MB; writing all of it (fill) would make the
 * whole memory resident in every worker, while reading a page the engine never wrote costs no
 * memory (the kernel's shared zero page) and compares fast. Pages are zeroed one by one inside a
 * dirty chunk, so a chunk with one written page does not make its other pages resident either.
 * `zeroPage` is what writes; the tests pass one that also records which pages were written.
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
 * Memory for one render, all zero. The previous render's memory is wiped and used again when it
 * kept its first size and the same limit: a new instance on all-zero memory is exactly a new
 * instance on new memory, and wiping costs a millisecond where dropping a used memory per render
 * costs the host several times that in garbage collection. Safe because an instance calls
 * nothing later: once its render has returned, no code of it runs again.
 */
export function sandboxMemory(memoryMb: number): SandboxMemory {
  const reusable = kept?.memoryMb === memoryMb && kept.memory.buffer.byteLength === ENGINE_MEMORY_MB * MB
  if (reusable && kept) wipe(new Uint8Array(kept.memory.buffer))
  else kept = create(memoryMb)
  const entry = kept
  entry.refused = false
  return {
    memory: entry.memory,
    get exhausted() {
      return entry.refused
    },
  }
}
