import type { Test } from 'tap'

export interface WatchedMemory {
  memory: WebAssembly.Memory
  /** The largest size the memory reached, in bytes. */
  largest: number
  /** Grows it refused (the engine asked for more than its maximum). */
  refused: number
}

/**
 * Every WebAssembly memory made in this process from now until the test ends, with the most it
 * ever held and the grows it refused: what the sandbox's memory did, read from the memory objects
 * themselves rather than from the process's RSS (which is the kernel's, not the code's).
 */
export function watchMemories(t: Test): WatchedMemory[] {
  const watched: WatchedMemory[] = []
  const Original = WebAssembly.Memory
  class Watched extends Original {
    constructor(descriptor: ConstructorParameters<typeof WebAssembly.Memory>[0]) {
      super(descriptor)
      const entry: WatchedMemory = { memory: this, largest: this.buffer.byteLength, refused: 0 }
      watched.push(entry)
      const grow = this.grow.bind(this)
      this.grow = (pages: number) => {
        try {
          const previous = grow(pages)
          entry.largest = Math.max(entry.largest, this.buffer.byteLength)
          return previous
        } catch (error) {
          entry.refused++
          throw error
        }
      }
    }
  }
  WebAssembly.Memory = Watched as typeof WebAssembly.Memory
  t.teardown(() => {
    WebAssembly.Memory = Original
  })
  return watched
}

export interface WatchedInstance {
  memory: WebAssembly.Memory
  /** The memory's size when the instance was made on it. */
  bytes: number
  /** The first byte that was not zero then, or -1: what the new engine could have read at once. */
  firstNonZero: number
}

/**
 * Every WebAssembly instance made in this process from now until the test ends on a memory it
 * imports, with that memory as it was at that moment, read in full (quickjs-emscripten instantiates
 * through WebAssembly.instantiate, with the memory among the imports).
 */
export function watchInstances(t: Test): WatchedInstance[] {
  const watched: WatchedInstance[] = []
  const original = WebAssembly.instantiate
  const instantiate = (module: unknown, imports?: Record<string, Record<string, unknown>>) => {
    for (const group of Object.values(imports ?? {})) {
      for (const value of Object.values(group)) {
        if (!(value instanceof WebAssembly.Memory)) continue
        const bytes = new Uint8Array(value.buffer)
        watched.push({ memory: value, bytes: bytes.length, firstNonZero: bytes.findIndex((byte) => byte !== 0) })
      }
    }
    return Reflect.apply(original, WebAssembly, [module, imports])
  }
  WebAssembly.instantiate = instantiate as typeof WebAssembly.instantiate
  t.teardown(() => {
    WebAssembly.instantiate = original
  })
  return watched
}
