import t from 'tap'
import { runInQuickJS } from '../../render/quickjs.js'
import { ENGINE_MEMORY_MB } from '../../render/sandbox-memory.js'
import { watchMemories } from './wasm-memories.js'

/**
 * The memory limit, checked on what the sandbox does rather than on the process's RSS: a layout
 * that allocates without end (one huge block, or many small ones) makes the engine ask its
 * WebAssembly memory to grow past its maximum; the grow is refused, the memory never holds more
 * than the engine's part plus the layout's limit, and the render fails with RENDER_MEMORY_LIMIT.
 * Run in this process (the render workers run the same function), so the memories can be watched.
 */

const MB = 1024 * 1024
const PAGE = 64 * 1024
const NO_DATA = { json: '{}', dates: false }

// Each with a limit of its own: a sandbox memory is kept for the next render of the same limit,
// and a new one (watched from its start) is made for another.
const LAYOUTS: { name: string; body: string; limitMb: number; grows: boolean }[] = [
  {
    // One block: the engine's own allocation limit refuses it before the memory is touched.
    name: 'one string of 300 million characters',
    body: "return function () { return 'x'.repeat(3e8) }",
    limitMb: 24,
    grows: false,
  },
  {
    name: 'an array of 2 GB at once',
    body: 'return function () { return String(new Array(2 ** 27 - 1).fill(0).length) }',
    limitMb: 25,
    grows: false,
  },
  {
    // The engine's counter sees a few bytes of each: only the memory's maximum stops them.
    name: 'many blocks of 4 KB',
    body: 'return function () { var hoard = []; while (true) hoard.push(new Uint8Array(4096)) }',
    limitMb: 26,
    grows: true,
  },
]

for (const { name, body, limitMb, grows } of LAYOUTS) {
  t.test(`${name}: refused, and the memory never passes its maximum`, async (t) => {
    const LIMIT_MB = limitMb
    const LIMITS = { timeoutMs: 120_000, memoryMb: limitMb, maxOutputBytes: 1024 }
    const memories = watchMemories(t)
    await t.rejects(runInQuickJS(body, NO_DATA, LIMITS), { code: 'RENDER_MEMORY_LIMIT' })
    t.ok(memories.length >= 1, 'the render ran on a memory made for it')
    const maximum = (ENGINE_MEMORY_MB + LIMIT_MB) * MB
    for (const watched of memories) {
      t.ok(watched.largest <= maximum, `it held ${watched.largest / MB} MB at most (maximum ${maximum / MB} MB)`)
    }
    // The engine's glue grows the memory by 20, 10 or 5 % of its size at a time, and a request for
    // more than the maximum is refused whole: it stops within 5 % of its maximum, where depends on
    // the size it started at (42.0 of 42 MB from 16 MB, 40.9 from 5.1 MB; 23.1 of 24 from 16 MB).
    if (grows)
      t.ok(
        memories.some((watched) => watched.refused > 0 && watched.largest * 1.05 + PAGE > maximum),
        'the memory grew to within one step of its maximum, and was refused further',
      )
    // And the next render in the same place works (its memory is fresh or wiped).
    t.equal(await runInQuickJS("return function () { return 'after' }", NO_DATA, LIMITS), 'after')
  })
}
