import t from 'tap'
import { bearer, buildTestApp, type TestApp } from '../helper.js'
import { slowLayout, UNREACHED_TIMEOUT_MS, whileRendering } from '../render/helpers.js'

const PUG = `h1= name
p.type #{type} / #{subtype}
p.layout #{typeof template}
ul
  each item in items
    li= item.question`

async function createTemplate(app: TestApp, token: string, body: object): Promise<string> {
  const res = await app.inject({ method: 'POST', url: '/form-templates', headers: bearer(token), payload: body })
  if (res.statusCode !== 200) throw new Error(res.body)
  return res.json().id
}

function render(app: TestApp, token: string, id: string, query = '') {
  return app.inject({ url: `/form-templates/${id}/render${query}`, headers: bearer(token) })
}

function renderWith(app: TestApp, token: string, id: string, payload: object) {
  return app.inject({ method: 'POST', url: `/form-templates/${id}/render`, headers: bearer(token), payload })
}

/**
 * One app for the tests that need no short time limit: each makes templates of its own, and an
 * app's first render starts its render workers, which takes most of a second. Its time limit is
 * one no render here means to reach (a memory bomb, a layout kept busy).
 */
const shared = await buildTestApp(t, { RENDER_TIMEOUT_MS: UNREACHED_TIMEOUT_MS, RENDER_MEMORY_MB: 32 })

t.test('pug by default, with every record field but the layout itself', async (t) => {
  const { app, tokens } = shared
  const id = await createTemplate(app, tokens.writeA, {
    type: 'admission',
    subtype: 'adult',
    name: 'Admission <form>',
    template: PUG,
    items: [
      { type: 'trueorfalse', question: 'Allergies?' },
      { type: 'date', question: 'Admitted on' },
    ],
  })
  const res = await render(app, tokens.readA, id)
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^text\/html/)
  t.equal(res.headers['cache-control'], 'no-store', 'patient data is not cached')
  t.equal(
    res.body,
    '<h1>Admission &lt;form&gt;</h1><p class="type">admission / adult</p><p class="layout">undefined</p><ul><li>Allergies?</li><li>Admitted on</li></ul>',
  )
})

t.test('ejs chosen by config.engine or by the caller; caller data as `data`, escaped', async (t) => {
  // (also: the layout text itself is not among the data)
  const { app, tokens } = shared
  const id = await createTemplate(app, tokens.writeA, {
    type: 'vitals',
    config: { engine: 'ejs' },
    template:
      '<%= typeof template %><h2><%= type %></h2><p><%= data.answers ? data.answers.pulse : "none" %></p><%- "<hr>" %>',
  })
  t.equal((await render(app, tokens.readA, id)).body, 'undefined<h2>vitals</h2><p>none</p><hr>')
  const filled = await renderWith(app, tokens.readA, id, { data: { answers: { pulse: '<b>72</b>' } } })
  t.equal(filled.statusCode, 200, 'a read token may print with data')
  t.equal(filled.body, 'undefined<h2>vitals</h2><p>&lt;b&gt;72&lt;/b&gt;</p><hr>')
  const pugId = await createTemplate(app, tokens.writeA, { type: 'x', template: 'p= type' })
  t.equal((await render(app, tokens.readA, pugId, '?engine=ejs')).body, 'p= type', 'the caller picks ejs')
  t.equal((await renderWith(app, tokens.readA, pugId, { engine: 'pug' })).body, '<p>x</p>')
})

t.test('jade is pug by its former name, from the caller or from config.engine', async (t) => {
  const { app, tokens } = shared
  const configured = await createTemplate(app, tokens.writeA, {
    type: 'x',
    template: 'p= type',
    config: { engine: 'jade' },
  })
  t.equal((await render(app, tokens.readA, configured)).body, '<p>x</p>')
  const plain = await createTemplate(app, tokens.writeA, { type: 'y', template: 'p= type', config: { engine: 'ejs' } })
  t.equal((await render(app, tokens.readA, plain, '?engine=jade')).body, '<p>y</p>', 'the caller overrides ejs')
  t.equal((await renderWith(app, tokens.readA, plain, { engine: 'jade' })).body, '<p>y</p>')
  // names that exist on every JavaScript object are not engines
  for (const engine of ['constructor', '__proto__', 'toString']) {
    const id = await createTemplate(app, tokens.writeA, { type: 'x', template: 'p', config: { engine } })
    t.match((await render(app, tokens.readA, id)).json(), { statusCode: 422, code: 'RENDER_BAD_ENGINE' }, engine)
    t.equal((await render(app, tokens.readA, id, `?engine=${engine}`)).statusCode, 400, `?engine=${engine}`)
  }
})

t.test('bad requests and templates without a layout', async (t) => {
  const { app, tokens } = shared
  const bare = await createTemplate(app, tokens.writeA, { type: 'no-layout' })
  const none = await render(app, tokens.readA, bare)
  t.equal(none.statusCode, 422)
  t.match(none.json(), { code: 'RENDER_NO_TEMPLATE' })
  const badConfig = await createTemplate(app, tokens.writeA, { type: 'x', template: 'p', config: { engine: 'jade2' } })
  t.match((await render(app, tokens.readA, badConfig)).json(), { statusCode: 422, code: 'RENDER_BAD_ENGINE' })
  t.equal((await render(app, tokens.readA, bare, '?engine=handlebars')).statusCode, 400)
  t.equal((await render(app, tokens.readA, bare, '?colour=red')).statusCode, 400)
  t.equal((await renderWith(app, tokens.readA, bare, { answers: {} })).statusCode, 400, 'unknown body property')
  t.equal((await renderWith(app, tokens.readA, bare, { data: 'text' })).statusCode, 400)
  t.equal((await render(app, tokens.readA, '000000000000000000000000')).statusCode, 404)
  const broken = await createTemplate(app, tokens.writeA, { type: 'x', template: 'p(class=' })
  const compile = await render(app, tokens.readA, broken)
  t.equal(compile.statusCode, 422)
  t.match(compile.json(), { code: 'RENDER_COMPILE_FAILED', message: /Pug:1/ })
  t.notMatch(compile.body, /node_modules|\/work\//)
})

t.test('facility isolation: another facility cannot print', async (t) => {
  const { app, tokens } = shared
  const id = await createTemplate(app, tokens.writeB, { type: 'x', template: 'p secret' })
  t.equal((await render(app, tokens.readA, id)).statusCode, 404)
  t.equal((await renderWith(app, tokens.writeA, id, {})).statusCode, 404)
  t.equal((await render(app, tokens.read, id)).statusCode, 200, 'an unbound token may')
})

t.test('layouts cannot reach the host', async (t) => {
  const { app, tokens } = shared
  const attempts = [
    'p= process.mainModule.require("child_process").execSync("id")',
    'p= this.constructor.constructor("return process")().pid',
    'p= data.constructor.constructor("return process")().pid',
    '- var p = global.process\np= p.pid',
    'p= require("fs").readFileSync("/etc/passwd")',
    'p= import("fs")',
  ]
  for (const template of attempts) {
    const id = await createTemplate(app, tokens.writeA, { type: 'x', template })
    const res = await renderWith(app, tokens.readA, id, { data: { a: 1 } })
    t.equal(res.statusCode, 422, template)
    t.notMatch(res.body, /root:|uid=|\/work\/|node_modules/, `${template}: nothing from the host`)
  }
  const typeofs = await createTemplate(app, tokens.writeA, {
    type: 'x',
    template: 'p #{typeof process} #{typeof require} #{typeof setTimeout} #{typeof fetch}',
  })
  t.equal((await render(app, tokens.readA, typeofs)).body, '<p>undefined undefined undefined undefined</p>')
})

t.test('an endless loop answers 422 while other requests are served; huge output is refused', async (t) => {
  const { app, tokens } = await buildTestApp(t, { RENDER_TIMEOUT_MS: 400, RENDER_MAX_OUTPUT_BYTES: 100_000 })
  const loop = await createTemplate(app, tokens.writeA, { type: 'x', template: '- while (true) {}' })
  const warm = await createTemplate(app, tokens.writeA, { type: 'x', template: 'p ok' })
  t.equal((await render(app, tokens.readA, warm)).statusCode, 200, 'the sandbox is up')
  let healthAt = 0
  const looping = render(app, tokens.readA, loop).then((res) => ({ res, at: Date.now() }))
  const health = await app.inject('/health')
  healthAt = Date.now()
  const { res, at } = await looping
  t.equal(health.statusCode, 200)
  t.ok(healthAt <= at, 'health answered before the loop was stopped')
  t.equal(res.statusCode, 422)
  t.match(res.json(), { code: 'RENDER_TIMEOUT' })
  const huge = await createTemplate(app, tokens.writeA, {
    type: 'x',
    // 200 KB in a hundred steps: past the output limit long before the time limit, on any machine.
    template: '- for (var i = 0; i < 100; i++)\n  p= "x".repeat(2000)',
  })
  t.match((await render(app, tokens.readA, huge)).json(), { statusCode: 422, code: 'RENDER_OUTPUT_TOO_LARGE' })
  t.equal((await render(app, tokens.readA, warm)).body, '<p>ok</p>', 'and the next print works')
})

t.test('a memory bomb answers 422 while other requests are served, and the next print works', async (t) => {
  const { app, tokens } = shared
  const bomb = await createTemplate(app, tokens.writeA, {
    type: 'x',
    template: '- var hoard = []\n- while (true) hoard.push(Math.random().toString(36).repeat(200))',
  })
  const warm = await createTemplate(app, tokens.writeA, { type: 'x', template: 'p ok' })
  t.equal((await render(app, tokens.readA, warm)).statusCode, 200, 'the sandbox is up')
  const bombing = render(app, tokens.readA, bomb).then((res) => ({ res, at: Date.now() }))
  const health = await app.inject('/health')
  const healthAt = Date.now()
  const list = await app.inject({ url: '/ward-occupants', headers: bearer(tokens.readA) })
  const { res, at } = await bombing
  t.equal(health.statusCode, 200)
  t.equal(list.statusCode, 200, 'and an API request too')
  t.ok(healthAt <= at, 'health answered before the render was stopped')
  t.equal(res.statusCode, 422)
  t.match(res.json(), { code: 'RENDER_MEMORY_LIMIT' })
  t.notMatch(res.body, /\/work\/|node_modules|isolate/i, 'no internals')
  t.equal((await render(app, tokens.readA, warm)).body, '<p>ok</p>', 'the next print works')
})

t.test('compiled layouts are cached per template version', async (t) => {
  const { app, tokens } = shared
  const before = app.renderer.stats().compiles
  const compiles = () => app.renderer.stats().compiles - before
  const id = await createTemplate(app, tokens.writeA, { type: 'x', template: 'p one' })
  await render(app, tokens.readA, id)
  await render(app, tokens.readA, id)
  t.equal(compiles(), 1)
  await app.inject({
    method: 'PATCH',
    url: `/form-templates/${id}`,
    headers: bearer(tokens.writeA),
    payload: { template: 'p two' },
  })
  t.equal((await render(app, tokens.readA, id)).body, '<p>two</p>', 'a new version renders the new layout')
  t.equal(compiles(), 2)
})

/** `levels` objects nested in one another: {"a":{"a":...1}}. */
function nested(levels: number): string {
  return `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`
}

function renderRaw(app: TestApp, token: string, id: string, payload: string) {
  return app.inject({
    method: 'POST',
    url: `/form-templates/${id}/render`,
    headers: { ...bearer(token), 'content-type': 'application/json' },
    payload,
  })
}

t.test('data nested deeper than 64 levels is refused, and other renders go on', async (t) => {
  const { app, tokens } = shared
  // meta at its own limit of 64 levels: the layout gets it, one level deeper inside the record
  const id = await createTemplate(app, tokens.writeA, {
    type: 'x',
    template: 'p= typeof data.a + " " + typeof meta.a',
    meta: JSON.parse(nested(64)),
  })
  // Busy for data.holdMs of wall time, however fast the engine runs loops.
  const busy = await createTemplate(app, tokens.writeB, {
    type: 'x',
    template: '- var until = Date.now() + data.holdMs\n- while (Date.now() < until) {}\np done',
  })
  t.equal((await renderRaw(app, tokens.readA, id, `{"data":${nested(64)}}`)).body, '<p>object object</p>', '64 levels')

  const tooDeep = await renderRaw(app, tokens.readA, id, `{"data":${nested(65)}}`)
  t.equal(tooDeep.statusCode, 400)
  t.same(tooDeep.json(), {
    statusCode: 400,
    code: 'FST_ERR_VALIDATION',
    error: 'Bad Request',
    name: 'BadRequest',
    message: 'body.data is nested too deeply: 65 levels, at most 64',
  })
  t.equal((await renderRaw(app, tokens.readA, '000000000000000000000000', `{"data":${nested(65)}}`)).statusCode, 400)

  // About 18 KB that used to end the render process, failing every render in flight with it.
  const hold = (holdMs: number) => renderWith(app, tokens.writeB, busy, { data: { holdMs } })
  t.equal((await hold(0)).body, '<p>done</p>', 'compiled and the render process is up')
  const { held: other, result: deep } = await whileRendering(hold, () =>
    renderRaw(app, tokens.readA, id, `{"data":${nested(3000)}}`),
  )
  t.equal(deep.statusCode, 400)
  t.match(deep.json(), {
    code: 'FST_ERR_VALIDATION',
    message: 'body.data is nested too deeply: 3000 levels, at most 64',
  })
  t.equal(other.statusCode, 200, "another facility's render in flight is not interrupted")
  t.equal(other.body, '<p>done</p>')
  t.equal((await renderRaw(app, tokens.readA, id, '{"data":{"a":{}}}')).body, '<p>object object</p>')
})

t.test('a layout whose compile timed out answers 422 at once; it does not hold up other facilities', async (t) => {
  // Compiling may take 5 x 100 ms, at least 2 s.
  const { app, tokens } = await buildTestApp(t, { RENDER_TIMEOUT_MS: 100 })
  const warm = await createTemplate(app, tokens.writeB, { type: 'x', template: 'p warm' })
  t.equal((await render(app, tokens.writeB, warm)).statusCode, 200, 'the sandbox is up')
  const compiles = () => app.renderer.stats().compiles

  const slow = await createTemplate(app, tokens.writeA, { type: 'x', template: slowLayout(1) })
  const before = compiles()
  const first = await render(app, tokens.readA, slow)
  t.equal(first.statusCode, 422)
  t.match(first.json(), { code: 'RENDER_TIMEOUT', message: 'template compilation exceeded the time limit of 2000 ms' })
  t.equal(compiles(), before + 1)
  const again = await render(app, tokens.readA, slow)
  t.equal(again.statusCode, 422)
  t.same(again.json(), first.json())
  t.equal(compiles(), before + 1, 'the second render did not compile again')

  const slow2 = await createTemplate(app, tokens.writeA, { type: 'x', template: slowLayout(2) })
  const slow3 = await createTemplate(app, tokens.writeA, { type: 'x', template: slowLayout(3) })
  const hello = await createTemplate(app, tokens.writeB, { type: 'x', template: 'p hello' })
  const order: string[] = []
  const track = (name: string, id: string, token: string) =>
    render(app, token, id).then((res) => order.push(`${name} ${res.statusCode}`))
  await Promise.all([
    track('slow-a2', slow2, tokens.readA),
    track('slow-a3', slow3, tokens.readA),
    track('hello-b', hello, tokens.writeB),
  ])
  // In arrival order, hello-b would compile after both; taking turns by facility, it compiles
  // right after slow-a2, a whole compile time limit before slow-a3 can end.
  t.ok(order.indexOf('hello-b 200') < order.indexOf('slow-a3 422'), order.join(', '))
  t.equal(compiles(), before + 4)
})
