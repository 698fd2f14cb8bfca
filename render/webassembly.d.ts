// @types/node 20 (the oldest Node this service supports) has no WebAssembly types; they come with
// the DOM library. The sandbox (quickjs.ts, sandbox-memory.ts) uses these two.
declare namespace WebAssembly {
  class Module {
    constructor(bytes: Uint8Array)
  }
  class Memory {
    constructor(descriptor: { initial: number; maximum?: number })
    readonly buffer: ArrayBuffer
    grow(pages: number): number
  }
}
