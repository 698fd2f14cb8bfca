import t from 'tap'
import { job, rejection, slowLayout, testRenderer, UNREACHED_TIMEOUT_MS } from './helpers.js'

/** Counts timer ticks while `work` runs: a blocked event loop would count (almost) none. */
async function ticksDuring<T>(work: Promise<T>): Promise<{ ticks: number; ms: number }> {
  let ticks = 0
  const started = Date.now()
  const timer = setInterval(() => ticks++, 10)
  try {
    await work.catch(() => undefined)
  } finally {
    clearInterval(timer)
  }
  return { ticks, ms: Date.now() - started }
}

t.test('an endless loop times out without blocking the host or other renders', async (t) => {
  const renderer = testRenderer(t, { timeoutMs: 500 }, { maxConcurrent: 4 })
  await renderer.render(job('pug', 'p warm'))
  const order: string[] = []
  const started = Date.now()
  const loop = renderer.render(job('ejs', '<% while (true) {} %>')).finally(() => order.push('loop'))
  const other = renderer.render(job('pug', 'p= n', { n: 42 })).finally(() => order.push('other'))
  const immediate = new Promise((resolve) => setImmediate(resolve)).then(() => order.push('setImmediate'))
  const { ticks } = await ticksDuring(loop)
  const elapsed = Date.now() - started

  await rejection(t, loop, 'RENDER_TIMEOUT')
  t.equal(await other, '<p>42</p>')
  await immediate
  t.same(order, ['setImmediate', 'other', 'loop'], 'the host and a second render finished while the loop ran')
  t.ok(ticks >= 15, `host timers kept firing (${ticks} ticks)`)
  // Not cut before its limit; how soon after it the loop was stopped depends on the machine's load
  // (the code stops it at the next interrupt check), so no upper bound on the clock here.
  t.ok(elapsed >= 450, `timed out after ${elapsed} ms for a 500 ms limit`)
})

t.test('other ways to spin are stopped by the same limit', async (t) => {
  const renderer = testRenderer(t, { timeoutMs: 300 })
  const spinners = [
    job('pug', '- (function next() { Promise.resolve().then(next) })()'),
    job('pug', "p(title='aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!'.match(/^(a+)+$/)) catastrophic regex"),
    job('ejs', '<% for (;;) { try { while (true) {} } catch (e) {} } %>'),
  ]
  for (const spinner of spinners) await rejection(t, renderer.render(spinner), 'RENDER_TIMEOUT')
})

/**
 * One renderer for the tests of the memory and output limits (32 MB, 2 MB), whose time limit is
 * out of reach: starting one takes most of a second.
 */
const unhurried = testRenderer(t, { timeoutMs: UNREACHED_TIMEOUT_MS, memoryMb: 32, maxOutputBytes: 2_097_152 })

t.test('a memory bomb hits the memory limit and the next render works', async (t) => {
  const renderer = unhurried
  const bomb = '- var hoard = []\n- while (true) hoard.push(Math.random().toString(36).repeat(200))'
  const { ticks, ms } = await ticksDuring(rejection(t, renderer.render(job('pug', bomb)), 'RENDER_MEMORY_LIMIT'))
  // A count, not a rate: a host blocked by the render would fire its timer once at most.
  t.ok(ticks >= 5, `host timers kept firing (${ticks} ticks in ${ms} ms)`)
  await rejection(
    t,
    renderer.render(job('ejs', '<% var a = []; while (true) a.push(new Array(1e6).fill(1)) %>')),
    'RENDER_MEMORY_LIMIT',
  )
  t.equal(await renderer.render(job('pug', 'p after')), '<p>after</p>')
})

t.test('huge single allocations are refused, and the next render works', async (t) => {
  // How much memory they reach is checked on the sandbox's memory itself, not on the process's RSS
  // (test/render/sandbox-memory-limit.test.ts: never past its maximum).
  const renderer = unhurried
  await renderer.render(job('pug', 'p warm'))
  await rejection(t, renderer.render(job('pug', "p(title='x'.repeat(3e8)) big")), 'RENDER_MEMORY_LIMIT')
  // 2 GB at once: more than the sandbox's WebAssembly memory may ever grow to.
  await rejection(t, renderer.render(job('pug', '- new Array(2 ** 27 - 1).fill(0)')), 'RENDER_MEMORY_LIMIT')
  t.equal(await renderer.render(job('pug', 'p after')), '<p>after</p>', 'a new render process takes over')
})

t.test('output beyond the limit is refused', async (t) => {
  // Ten megabytes of escaped ejs output take the sandbox's interpreter about a second, many more on
  // a loaded machine: the time limit is out of reach, so that this test is about the output limit alone.
  const renderer = unhurried
  const tenMegabytes = '<% for (var i = 0; i < 10240; i++) { %><%= chunk %><% } %>'
  const error = await rejection(
    t,
    renderer.render(job('ejs', tenMegabytes, { chunk: 'x'.repeat(1024) })),
    'RENDER_OUTPUT_TOO_LARGE',
  )
  t.match(error.message, '2097152 bytes')
  await rejection(
    t,
    renderer.render(job('pug', '- var s = "x"\n- for (var i = 0; i < 23; i++) s += s\n!= s')),
    'RENDER_OUTPUT_TOO_LARGE',
  )
  t.equal((await renderer.render(job('pug', '!= s', { s: 'y'.repeat(2_000_000) }))).length, 2_000_000)
})

t.test('the output limit counts UTF-8 bytes, not characters', async (t) => {
  const renderer = testRenderer(t, { maxOutputBytes: 1024 })
  t.equal(await renderer.render(job('ejs', '<%- s %>', { s: '€'.repeat(341) })), '€'.repeat(341))
  await rejection(t, renderer.render(job('ejs', '<%- s %>', { s: '€'.repeat(342) })), 'RENDER_OUTPUT_TOO_LARGE')
})

t.test('a compile that takes too long is stopped and the compiler recovers', async (t) => {
  const renderer = testRenderer(t, {}, { compileTimeoutMs: 1000 })
  await renderer.render(job('pug', 'p warm'))
  const huge = Array.from({ length: 40_000 }, (_, i) => `p(class=c${i % 7} title=t)= v${i} + w`).join('\n')
  const { ticks, ms } = await ticksDuring(rejection(t, renderer.render(job('pug', huge)), 'RENDER_TIMEOUT'))
  // A count, not a rate: a host blocked by the render would fire its timer once at most.
  t.ok(ticks >= 5, `host timers kept firing (${ticks} ticks in ${ms} ms)`)
  t.equal(await renderer.render(job('pug', 'p recovered')), '<p>recovered</p>')
  t.equal(await renderer.render(job('ejs', '<%= 1 + 1 %>')), '2')
})

t.test('renders beyond maxConcurrent wait for a free isolate', async (t) => {
  const renderer = testRenderer(t, { timeoutMs: 300 }, { maxConcurrent: 1 })
  await renderer.render(job('pug', 'p warm'))
  const order: string[] = []
  const loop = renderer.render(job('ejs', '<% while (true) {} %>')).catch(() => order.push('loop'))
  const next = renderer.render(job('ejs', 'next')).then(() => order.push('next'))
  await Promise.all([loop, next])
  t.same(order, ['loop', 'next'])
})

t.test('a compile that timed out is remembered for that template version', async (t) => {
  const renderer = testRenderer(t, {}, { compileTimeoutMs: 300 })
  const slow = job('pug', slowLayout(1), {}, 'slow:1:pug')
  const first = await rejection(t, renderer.render(slow), 'RENDER_TIMEOUT')
  t.match(first.message, /compilation exceeded the time limit of 300 ms/)
  // Compiled once; each answer a timeout, the later ones from the cache.
  const stats = (answers: number) => ({
    compiles: 1,
    cacheHits: answers - 1,
    cached: 1,
    waiting: 0,
    failures: { RENDER_TIMEOUT: answers },
    refused: { busy: 0, cancelled: 0 },
  })
  t.same(renderer.stats(), stats(1))
  const again = await rejection(t, renderer.render(slow), 'RENDER_TIMEOUT')
  t.equal(again.message, first.message)
  t.same(renderer.stats(), stats(2), 'answered from the cache, not compiled again')
  await rejection(t, renderer.render({ ...slow, cacheKey: 'slow:2:pug' }), 'RENDER_TIMEOUT')
  t.equal(renderer.stats().compiles, 2, 'a new version is compiled again')
})

t.test("one owner's slow compiles do not hold up another owner's first render", async (t) => {
  const renderer = testRenderer(t, {}, { compileTimeoutMs: 300 })
  await renderer.render({ ...job('pug', 'p warm'), owner: 'C' })
  const order: string[] = []
  const track = (name: string, rendering: Promise<string>) =>
    rendering.then(
      () => order.push(`${name} ok`),
      (error: { code?: string }) => order.push(`${name} ${error.code}`),
    )
  const renders = [1, 2, 3].map((n) =>
    track(`slow-a${n}`, renderer.render({ ...job('pug', slowLayout(n)), owner: 'A' })),
  )
  renders.push(track('hello-b', renderer.render({ ...job('pug', 'p hello'), owner: 'B' })))
  await Promise.all(renders)
  // In arrival order, hello-b would compile after all three; taking turns, it compiles right
  // after the first, two whole compile time limits before the third can end.
  t.ok(order.indexOf('hello-b ok') < order.indexOf('slow-a3 RENDER_TIMEOUT'), order.join(', '))
  t.equal(renderer.stats().compiles, 5)
})
