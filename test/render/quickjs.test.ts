import t from 'tap'
import { MAX_DATA_DEPTH } from '../../render/render-data.js'
import { job, rejection, testRenderer, UNREACHED_TIMEOUT_MS } from './helpers.js'

/**
 * One renderer for the tests that neither count its compiles nor set limits of their own: starting
 * one (its compile and render workers) takes most of a second, more than most of these tests.
 */
const shared = testRenderer(t)

// What the WebAssembly sandbox (plugins/render/quickjs.ts) promises beyond the engine-neutral
// tests in sandbox.test.ts, limits.test.ts and escape.test.ts.

/** Every global of the layout's world is one of ECMAScript's own; a host function would be a way out. */
const ECMASCRIPT_GLOBALS = new Set(
  (
    'AggregateError Array ArrayBuffer BigInt BigInt64Array BigUint64Array Boolean DataView Date Error EvalError ' +
    'Float16Array Float32Array Float64Array Function Infinity Int16Array Int32Array Int8Array InternalError Iterator ' +
    'JSON Map Math NaN Number Object Promise Proxy RangeError ReferenceError Reflect RegExp Set String Symbol ' +
    'SyntaxError TypeError URIError Uint16Array Uint32Array Uint8Array Uint8ClampedArray WeakMap WeakSet decodeURI ' +
    'decodeURIComponent encodeURI encodeURIComponent escape eval globalThis isFinite isNaN parseFloat parseInt ' +
    'undefined unescape'
  ).split(' '),
)

t.test('the layout sees only the language: no host object among its globals', async (t) => {
  const renderer = shared
  const names = await renderer.render(job('ejs', '<%- Object.getOwnPropertyNames(globalThis).join(" ") %>'))
  const foreign = names.split(' ').filter((name) => !ECMASCRIPT_GLOBALS.has(name))
  t.same(foreign, [], `globals: ${names}`)
  t.ok(names.includes('JSON') && names.includes('Array'), 'the list is real')
})

t.test('every character crosses the sandbox boundary intact, both ways', async (t) => {
  const renderer = shared
  // NUL ends a C string and a lone surrogate has no UTF-8 form: both once cut or changed output.
  const s = 'a\u0000b\ud800c€😀'
  t.equal(await renderer.render(job('ejs', '<%- s %>', { s })), s, 'data to output')
  t.equal(await renderer.render(job('ejs', 'x\u0000y<%- s %>', { s })), `x\u0000y${s}`, 'layout text')
  t.equal(await renderer.render(job('pug', 'p!= s', { s })), `<p>${s}</p>`, 'pug')
  t.equal(await renderer.render(job('ejs', '<%- s.length %>', { s })), String(s.length), 'the layout sees it whole')
})

t.test('data the sandbox could not hold as sent is refused, not changed', async (t) => {
  const renderer = shared
  for (const [label, data] of [
    ['NaN', { n: Number.NaN }],
    ['Infinity', { n: Number.POSITIVE_INFINITY }],
    ['a Map', { m: new Map([[1, 2]]) }],
    ['a BigInt', { n: 1n }],
    [
      'itself',
      (() => {
        const cycle: Record<string, unknown> = {}
        cycle.self = cycle
        return cycle
      })(),
    ],
  ] as const) {
    const error = await rejection(t, renderer.render(job('pug', 'p x', data)), 'RENDER_FAILED')
    t.match(error.message, /cannot be copied into the sandbox/, label)
  }
})

t.test('dates anywhere in the data arrive as dates; a __proto__ key stays an ordinary key', async (t) => {
  const renderer = shared
  const data = { visits: [{ at: new Date(86_400_000) }], meta: JSON.parse('{"__proto__":{"polluted":1},"a":1}') }
  const html = await renderer.render(
    job('ejs', '<%= visits[0].at.getTime() %> <%= typeof meta.polluted %> <%= Object.keys(meta).join() %>', data),
  )
  t.equal(html, '86400000 undefined __proto__,a')
})

t.test('deep recursion fails that render with the reason, and the next render works', async (t) => {
  const renderer = shared
  const error = await rejection(
    t,
    renderer.render(job('pug', '- function f(n) { return f(n + 1) + 1 }\np= f(0)')),
    'RENDER_FAILED',
  )
  t.match(error.message, /^Pug:2\n[\s\S]*stack overflow/)
  t.equal(await renderer.render(job('pug', 'p after')), '<p>after</p>')
})

t.test('the memory limit holds for many small allocations, not only for one large one', async (t) => {
  const renderer = testRenderer(t, { timeoutMs: UNREACHED_TIMEOUT_MS, memoryMb: 32 })
  await renderer.render(job('pug', 'p warm'))
  // 4 KB blocks: the engine's own allocation counter sees only a few bytes of each in this build.
  // That the WebAssembly memory's maximum is what stops them (it grows to it and refuses more) is
  // checked on the memory itself in test/render/sandbox-memory-limit.test.ts, not on the RSS.
  const hoard = '- var hoard = []\n- while (true) hoard.push(new Uint8Array(4096))'
  await rejection(t, renderer.render(job('pug', hoard)), 'RENDER_MEMORY_LIMIT')
  t.equal(await renderer.render(job('pug', 'p after')), '<p>after</p>')
})

t.test('data nests up to MAX_DATA_DEPTH levels; deeper is refused before it reaches the sandbox', async (t) => {
  const renderer = shared
  const nested = (levels: number) => {
    let value: Record<string, unknown> = { leaf: true }
    for (let i = 1; i < levels; i++) value = { a: value }
    return value
  }
  const layout = '<% var v = locals, n = 0; while (v.a) { v = v.a; n++ } %><%= n %>'
  // The data object itself is the first level.
  t.equal(await renderer.render(job('ejs', layout, nested(MAX_DATA_DEPTH))), String(MAX_DATA_DEPTH - 1))
  const error = await rejection(t, renderer.render(job('ejs', layout, nested(MAX_DATA_DEPTH + 1))), 'RENDER_FAILED')
  t.match(error.message, `nested deeper than ${MAX_DATA_DEPTH} levels`)
})
