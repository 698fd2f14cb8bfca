import t from 'tap'
import { RENDER_ENGINES, type RenderEngine } from '../../render/sandbox.js'
import { job, rejection, testRenderer, UNREACHED_TIMEOUT_MS, whileRendering } from './helpers.js'

/**
 * One renderer for the tests that neither count its compiles nor set limits of their own: starting
 * one (its compile and render workers) takes most of a second, more than most of these tests.
 */
const shared = testRenderer(t)

const record = {
  name: 'Ward 3 <East>',
  beds: [
    { code: 'B-1', occupied: true },
    { code: 'B-2', occupied: false },
  ],
}

const layouts: Record<RenderEngine, string> = {
  pug: [
    'h1= name',
    'p Printed by #{printedBy}',
    'ul',
    '  each bed in beds',
    '    li(class=bed.occupied ? "busy" : "free")= bed.code',
  ].join('\n'),
  ejs: [
    '<h1><%= name %></h1>',
    '<p>Printed by <%= printedBy %></p>',
    '<ul><% beds.forEach(function (bed) { %><li class="<%= bed.occupied ? "busy" : "free" %>"><%= bed.code %></li><% }) %></ul>',
  ].join('\n'),
}

t.test('both engines are offered', async (t) => {
  t.same([...RENDER_ENGINES], ['pug', 'ejs'])
})

for (const engine of RENDER_ENGINES) {
  t.test(`${engine}: renders record fields and caller data`, async (t) => {
    const renderer = shared
    const html = await renderer.render(job(engine, layouts[engine], { ...record, printedBy: 'Nurse Joy' }))
    t.match(html, '<h1>Ward 3 &lt;East&gt;</h1>')
    t.match(html, 'Printed by Nurse Joy')
    t.match(html, '<li class="busy">B-1</li>')
    t.match(html, '<li class="free">B-2</li>')
  })
}

t.test('escaped output escapes markup, raw output does not', async (t) => {
  const renderer = shared
  const data = { x: '<script>alert("x")</script>' }
  const pug = await renderer.render(job('pug', 'p #{x}\np= x\ndiv!= x', data))
  t.equal(
    pug,
    '<p>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</p><p>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</p>' +
      '<div><script>alert("x")</script></div>',
  )
  const ejs = await renderer.render(job('ejs', '<p><%= x %></p><div><%- x %></div>', data))
  t.equal(ejs, '<p>&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;</p><div><script>alert("x")</script></div>')
  const attribute = await renderer.render(job('pug', 'a(title=x) link', data))
  t.notMatch(attribute, '<script>')
})

t.test('pug attributes, classes, styles and mixins behave like pug', async (t) => {
  const renderer = shared
  const source = [
    'mixin bed(code)',
    '  li.bed(class={ busy: code === "B-1" })&attributes(attributes)= code',
    'ul#beds(data-ward=ward style={ color: "red" })',
    '  +bed("B-1")(title="first")',
    '  +bed("B-2")',
    'input(type="checkbox" checked)',
  ].join('\n')
  const html = await renderer.render(job('pug', source, { ward: 'W"3' }))
  t.equal(
    html,
    '<ul id="beds" data-ward="W&quot;3" style="color:red;"><li class="bed busy" title="first">B-1</li>' +
      '<li class="bed">B-2</li></ul><input type="checkbox" checked="checked"/>',
  )
})

t.test('data is a copy: the template cannot change the caller objects', async (t) => {
  const renderer = shared
  const data = { patient: { name: 'Ann' }, list: [1, 2] }
  const html = await renderer.render(
    job('ejs', '<% patient.name = "changed"; list.push(3); patient.__proto__.polluted = 1 %><%= patient.name %>', data),
  )
  t.equal(html, 'changed')
  t.same(data, { patient: { name: 'Ann' }, list: [1, 2] })
  t.equal((Object.prototype as Record<string, unknown>).polluted, undefined)
})

t.test('dates and nested values arrive intact', async (t) => {
  const renderer = shared
  const html = await renderer.render(
    job('pug', 'p= when.toISOString()\np= nested.list.length\np= missing === undefined', {
      when: new Date(0),
      nested: { list: [1, 2, 3] },
    }),
  )
  t.equal(html, '<p>1970-01-01T00:00:00.000Z</p><p>3</p><p>true</p>')
})

t.test('data that cannot be copied is a render error, not a crash', async (t) => {
  const renderer = shared
  await rejection(t, renderer.render(job('pug', 'p x', { callback: () => 1 })), 'RENDER_FAILED')
})

t.test('data nested deeper than the render process can read fails that render only', async (t) => {
  const renderer = testRenderer(t, { timeoutMs: UNREACHED_TIMEOUT_MS }, { maxConcurrent: 4 })
  // Busy for holdMs of wall time, however fast the engine runs loops.
  const holding = '- var until = Date.now() + holdMs\n- while (Date.now() < until) {}\np done'
  const busy = job('pug', holding, {}, 'busy:1:pug')
  const hold = (holdMs: number) => renderer.render({ ...busy, data: { holdMs } })
  const plain = job('pug', 'p= typeof a', {}, 'plain:1:pug')
  t.equal(await hold(0), '<p>done</p>', 'both layouts compiled beforehand')
  t.equal(await renderer.render(plain), '<p>undefined</p>')
  // 3000 levels: more than the sandbox takes (MAX_DATA_DEPTH); before a fix, data like this once
  // ended the render process and failed every render in flight. 100000 levels: more than V8's
  // own encoders could walk.
  for (const levels of [3000, 100_000]) {
    let deep: unknown = 1
    for (let i = 0; i < levels; i++) deep = { a: deep }
    const failing = () => rejection(t, renderer.render({ ...plain, data: { a: deep } }), 'RENDER_FAILED')
    const { held, result: error, holdMs } = await whileRendering(hold, failing)
    t.match(error.message, /cannot be copied into the sandbox/)
    t.equal(held, '<p>done</p>', `${levels} levels: the render in flight was not interrupted`)
    // whileRendering answers only then (holding longer on a machine too slow for a short hold).
    t.pass(`it was still running (${holdMs} ms) when the deep data failed`)
  }
  t.equal(await renderer.render({ ...plain, data: { a: {} } }), '<p>object</p>')
})

t.test('compile errors carry the template line', async (t) => {
  const renderer = shared
  const cases: Array<[RenderEngine, string, RegExp]> = [
    ['pug', 'p ok\np(title=)\np after', /^Pug:2:\d+/],
    ['pug', 'p ok\n- var x = ;\np after', /^Pug:2\n[\s\S]*> 2\| - var x = ;[\s\S]*SyntaxError: Unexpected token/],
    ['pug', 'p ok\n  p badly indented\n p', /^Pug:3/],
    [
      'ejs',
      'line 1\n<% var x = ; %>\nline 3',
      /^ejs:2\n[\s\S]*> 2\| <% var x = ; %>[\s\S]*SyntaxError: Unexpected token/,
    ],
    ['ejs', 'line 1\nline 2\n<% if (open) { %>\nline 4', /^ejs:4\n[\s\S]*SyntaxError/],
    ['ejs', 'line 1\n<% never closed', /Could not find matching close tag/],
  ]
  for (const [engine, source, pattern] of cases) {
    const error = await rejection(t, renderer.render(job(engine, source)), 'RENDER_COMPILE_FAILED')
    t.match(error.message, pattern, `${engine}: ${JSON.stringify(source)}`)
  }
})

t.test('runtime errors are RENDER_FAILED with the template line', async (t) => {
  const renderer = shared
  const pug = await rejection(t, renderer.render(job('pug', 'p ok\np= ward.beds.length')), 'RENDER_FAILED')
  t.match(pug.message, /^Pug:2\n[\s\S]*cannot read property 'beds' of undefined/)
  const ejs = await rejection(t, renderer.render(job('ejs', 'ok\n<%= ward.beds %>')), 'RENDER_FAILED')
  t.match(ejs.message, /^ejs:2\n[\s\S]*'ward' is not defined/)
  const thrown = await rejection(t, renderer.render(job('ejs', '<% throw "plain string" %>')), 'RENDER_FAILED')
  t.match(thrown.message, 'plain string')
})

t.test('include, extends and filters are refused at compile time', async (t) => {
  const renderer = shared
  for (const source of [
    'include /etc/passwd',
    'include header.pug',
    'extends layout',
    'p\n  include:markdown-it notes.md',
  ]) {
    const error = await rejection(t, renderer.render(job('pug', source)), 'RENDER_COMPILE_FAILED')
    t.match(error.message, /not available in print layouts/)
  }
  const filter = await rejection(t, renderer.render(job('pug', ':markdown-it\n  # title')), 'RENDER_COMPILE_FAILED')
  t.match(filter.message, /filters are not available/)
  const ejs = await rejection(t, renderer.render(job('ejs', '<%- include("/etc/passwd") %>')), 'RENDER_FAILED')
  t.match(ejs.message, /^ejs:1\n[\s\S]*include\("\/etc\/passwd"\)[\s\S]*not a function/)
})

t.test('a second render of the same cache key does not compile again', async (t) => {
  const renderer = testRenderer(t)
  const first = await renderer.render(job('pug', 'p= n', { n: 1 }, 'form-1:1:pug'))
  const second = await renderer.render(job('pug', 'p= n', { n: 2 }, 'form-1:1:pug'))
  t.equal(first, '<p>1</p>')
  t.equal(second, '<p>2</p>')
  t.match(renderer.stats(), { compiles: 1, cacheHits: 1, cached: 1 })

  await renderer.render(job('pug', 'p= n + 1', { n: 2 }, 'form-1:1:pug'))
  t.equal(renderer.stats().compiles, 2, 'the same key with other source compiles again')

  await Promise.all([1, 2, 3].map((n) => renderer.render(job('ejs', '<%= n %>', { n }, 'form-2:1:ejs'))))
  t.equal(renderer.stats().compiles, 3, 'concurrent first renders share one compile')
  t.equal(renderer.stats().cacheHits, 3)
})

t.test('templates that share a layout share one compile and one cache entry', async (t) => {
  const renderer = testRenderer(t)
  t.equal(await renderer.render(job('pug', 'p= n', { n: 1 }, 'form-1:1:pug')), '<p>1</p>')
  t.equal(await renderer.render(job('pug', 'p= n', { n: 2 }, 'form-2:1:pug')), '<p>2</p>')
  t.equal(await renderer.render(job('pug', 'p= n', { n: 3 }, 'form-1:2:pug')), '<p>3</p>', 'a new version')
  t.match(renderer.stats(), { compiles: 1, cacheHits: 2, cached: 1 })
  // The same text is another layout in the other engine.
  t.equal(await renderer.render(job('ejs', 'p= n', { n: 4 }, 'form-3:1:ejs')), 'p= n')
  t.equal(renderer.stats().compiles, 2)
})

t.test('the cache is bounded by bytes, not by a count of layouts', async (t) => {
  const renderer = testRenderer(t)
  for (let n = 0; n < 250; n++) await renderer.render(job('ejs', `<p>${n}</p>`))
  t.equal(renderer.stats().cached, 250, 'more than the 200 layouts once kept at most')
  await renderer.render(job('ejs', '<p>0</p>'))
  t.equal(renderer.stats().compiles, 250, 'the first one is still there')
})

t.test('a template that does not compile is not compiled again either', async (t) => {
  const renderer = testRenderer(t)
  await rejection(t, renderer.render(job('ejs', '<% if ( %>', {}, 'broken:1:ejs')), 'RENDER_COMPILE_FAILED')
  await rejection(t, renderer.render(job('ejs', '<% if ( %>', {}, 'broken:1:ejs')), 'RENDER_COMPILE_FAILED')
  t.match(renderer.stats(), { compiles: 1, cacheHits: 1, cached: 1 })
  t.same(renderer.stats().failures, { RENDER_COMPILE_FAILED: 2 }, 'both failures counted, by code (the metrics)')
  t.equal(renderer.stats().waiting, 0)
})

t.test('the cache is bounded', async (t) => {
  const renderer = testRenderer(t, {}, { cacheEntries: 2 })
  for (const key of ['a', 'b', 'c']) await renderer.render(job('pug', `p ${key}`, {}, key))
  t.equal(renderer.stats().cached, 2)
  await renderer.render(job('pug', 'p a', {}, 'a'))
  t.equal(renderer.stats().compiles, 4, 'the least recently used entry was dropped')
})

t.test('the cache is bounded in bytes too: a budget of 0 keeps nothing', async (t) => {
  const source = (key: string) => `p ${key.repeat(100)}`
  const one = testRenderer(t, {}, { cacheBytes: 0 })
  await one.render(job('pug', source('a'), {}, 'a'))
  await one.render(job('pug', source('a'), {}, 'a'))
  t.same([one.stats().cached, one.stats().compiles], [0, 2], 'nothing kept')
})

t.test('an unknown engine and a closed renderer are refused', async (t) => {
  const renderer = testRenderer(t)
  const unknown = { ...job('pug', 'p x'), engine: 'handlebars' as RenderEngine }
  await rejection(t, renderer.render(unknown), 'RENDER_COMPILE_FAILED')
  renderer.close()
  await t.rejects(renderer.render(job('pug', 'p x')), /closed/)
})
