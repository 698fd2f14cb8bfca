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

// Which pages a wipe writes is what the code decides; how much of that the kernel makes resident
// (huge pages, reclaim) is the machine's, so the test records the writes rather than the RSS.
t.test('a wipe writes only the pages the engine wrote, never the untouched part', async (t) => {
  const bytes = new Uint8Array(new WebAssembly.Memory({ initial: ENGINE_MEMORY_MB * 16 }).buffer)
  const at = scribble(bytes)
  bytes.fill(3, 7 * 4096 + 10, 9 * 4096 + 20) // a run over three pages
  const expected = new Set(at.map((offset) => offset - (offset % 4096)))
  for (const page of [7, 8, 9]) expected.add(page * 4096)
  const written: number[] = []
  wipe(bytes, (page) => {
    written.push(page.byteOffset)
    t.equal(page.length, 4096, 'a page at a time')
    page.fill(0)
  })
  t.same(
    [...written].sort((a, b) => a - b),
    [...expected].sort((a, b) => a - b),
    'exactly the dirty pages',
  )
  t.equal(
    bytes.findIndex((b) => b !== 0),
    -1,
    'and every byte is zero after',
  )
  const again: number[] = []
  wipe(bytes, (page) => again.push(page.byteOffset))
  t.same(again, [], 'a clean memory is not written at all')
})

t.test('a memory the engine grew is wiped to its full size; one grown past 16 MB is dropped', async (t) => {
  const START_PAGES = 82
  const first = sandboxMemory(9, START_PAGES)
  t.equal(first.memory.buffer.byteLength, START_PAGES * 65_536, 'it starts on the pages asked for')
  first.memory.grow(100) // as the engine grows it for its heap
  const grown = new Uint8Array(first.memory.buffer)
  const at = scribble(grown)
  grown.fill(1, grown.length - 3 * 65_536)
  const second = sandboxMemory(9, START_PAGES)
  t.equal(second.memory, first.memory, 'grown but within 16 MB: used again')
  t.equal(
    new Uint8Array(second.memory.buffer).findIndex((b) => b !== 0),
    -1,
    `wiped to its end (${second.memory.buffer.byteLength} bytes)`,
  )
  t.ok(at.includes(grown.length - 1), 'its last byte was written too')

  second.memory.grow(ENGINE_MEMORY_MB * 16 - 182 + 1)
  t.ok(second.memory.buffer.byteLength > ENGINE_MEMORY_MB * MB)
  const third = sandboxMemory(9, START_PAGES)
  t.not(third.memory, second.memory, 'past 16 MB: a new memory')
  t.equal(third.memory.buffer.byteLength, START_PAGES * 65_536, 'on the pages asked for again')
})
