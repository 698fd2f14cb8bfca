import t from 'tap'
import { ENGINE_MEMORY_MB, REUSED_MEMORY_MB, sandboxMemory, wipe } from '../../render/sandbox-memory.js'

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

t.test('a released memory comes back all zero; one a render still runs on is never handed to another', async (t) => {
  const first = sandboxMemory(7)
  scribble(new Uint8Array(first.memory.buffer))
  const second = sandboxMemory(7)
  t.not(second.memory, first.memory, 'not released: the second caller gets a memory of its own')
  t.equal(
    new Uint8Array(first.memory.buffer).findIndex((b) => b !== 0),
    0,
    "and the first render's memory was not wiped under it",
  )
  second.release()
  first.release()
  const third = sandboxMemory(7)
  t.equal(third.memory, first.memory, 'released: used again')
  t.equal(
    new Uint8Array(third.memory.buffer).findIndex((b) => b !== 0),
    -1,
    'wiped first',
  )
  third.release()
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

t.test('every render starts on the same size: a memory wiped to its end, one that grew dropped', async (t) => {
  const START_PAGES = 82
  const first = sandboxMemory(9, START_PAGES)
  const size = REUSED_MEMORY_MB * MB
  t.equal(first.memory.buffer.byteLength, size, `it starts on ${REUSED_MEMORY_MB} MB, more than the engine needs`)
  const bytes = new Uint8Array(first.memory.buffer)
  const at = scribble(bytes)
  bytes.fill(1, bytes.length - 3 * 65_536)
  first.release()
  const second = sandboxMemory(9, START_PAGES)
  t.equal(second.memory, first.memory, 'never grew: used again')
  t.equal(
    new Uint8Array(second.memory.buffer).findIndex((b) => b !== 0),
    -1,
    `wiped to its end (${second.memory.buffer.byteLength} bytes)`,
  )
  t.ok(at.includes(bytes.length - 1), 'its last byte was written too')

  second.memory.grow(1) // as the engine grows it for a large print's heap
  second.release()
  const third = sandboxMemory(9, START_PAGES)
  t.not(third.memory, second.memory, 'grown: a new memory, so its size tells the next render nothing')
  t.equal(third.memory.buffer.byteLength, size, 'on the same size as every render')
  third.release()
})

t.test('an engine that needs more than the reused size starts on what it needs', async (t) => {
  const first = sandboxMemory(6)
  t.equal(first.memory.buffer.byteLength, ENGINE_MEMORY_MB * MB, 'the engine as built: its 16 MB')
  first.release()
})
