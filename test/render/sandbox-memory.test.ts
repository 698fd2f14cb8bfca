import { readFileSync } from 'node:fs'
import t from 'tap'
import { ENGINE_MEMORY_MB, sandboxMemory, wipe } from '../../render/sandbox-memory.js'

const MB = 1024 * 1024

/** Bytes written where a wipe that skips zero parts could miss them: edges of pages and chunks. */
function scribble(bytes: Uint8Array): number[] {
  const at = [0, 1, 4095, 4096, 65_535, 65_536, 65_537, 5 * MB + 123, bytes.length - 4097, bytes.length - 1]
  for (const offset of at) bytes[offset] = 0xa5
  return at
}

t.test('a wipe leaves every byte zero, wherever the engine wrote', async (t) => {
  const bytes = new Uint8Array(new WebAssembly.Memory({ initial: ENGINE_MEMORY_MB * 16 }).buffer)
  const at = scribble(bytes)
  // A whole dirty page and a whole dirty chunk, besides the single bytes.
  bytes.fill(7, 3 * 4096, 4 * 4096)
  bytes.fill(9, 2 * 65_536, 3 * 65_536)
  wipe(bytes)
  t.equal(
    bytes.findIndex((b) => b !== 0),
    -1,
    'no byte left',
  )
  t.ok(at.length > 0)
})

t.test('a reused sandbox memory comes back all zero', async (t) => {
  const first = sandboxMemory(8)
  scribble(new Uint8Array(first.memory.buffer))
  const second = sandboxMemory(8)
  t.equal(second.memory, first.memory, 'the same memory, used again')
  t.equal(
    new Uint8Array(second.memory.buffer).findIndex((b) => b !== 0),
    -1,
    'wiped',
  )
})

// Writing zeros over the whole memory (as fill does) would make all of it resident: 64 MB here.
t.test(
  'a wipe does not make the untouched part of a memory resident',
  { skip: process.platform !== 'linux' },
  async (t) => {
    const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]) * 1024
    const memories = Array.from({ length: 4 }, () => new WebAssembly.Memory({ initial: ENGINE_MEMORY_MB * 16 }))
    const before = rss()
    for (const memory of memories) {
      const bytes = new Uint8Array(memory.buffer)
      scribble(bytes)
      wipe(bytes)
    }
    const grown = rss() - before
    t.ok(grown < 16 * MB, `the process grew by ${(grown / MB).toFixed(1)} MB for 4 memories of 16 MB`)
  },
)
