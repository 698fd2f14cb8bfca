import { execSync } from 'node:child_process'
import { existsSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { RenderEngine } from '../../render/sandbox.js'
import { job, rejection, testRenderer } from './helpers.js'

/**
 * One renderer for the tests that set no limits of their own: starting one (its compile and
 * render workers) takes most of a second, more than most of these tests.
 */
const shared = testRenderer(t)

/**
 * Every attempt tries to leave a trace on the host: write a marker file or call a local HTTP
 * server. Whatever the template gets back, the marker must not exist and the server must not
 * be called; where the attempt throws, it must be a RenderError.
 */
const marker = join(tmpdir(), `render-escape-${process.pid}`)
const write = `writeFileSync(${JSON.stringify(marker)}, 'escaped')`

function attempts(url: string): Array<[RenderEngine, string, string]> {
  return [
    ['pug', 'process.mainModule.require', `- process.mainModule.require('fs').${write}`],
    ['pug', 'child_process', "- process.mainModule.require('child_process').execSync('id')"],
    [
      'pug',
      'this.constructor.constructor',
      `- this.constructor.constructor('return process')().mainModule.require('fs').${write}`,
    ],
    [
      'pug',
      'data constructor',
      `- patient.constructor.constructor('return process')().mainModule.require('fs').${write}`,
    ],
    ['pug', 'global.process', `- var p = global.process\n- p.mainModule.require('fs').${write}`],
    ['pug', 'globalThis.process', `- var p = globalThis.process\n- p.mainModule.require('fs').${write}`],
    ['pug', 'require', `- require('fs').${write}`],
    ['pug', 'dynamic import', `- import('fs').then(function (fs) { fs.${write} })`],
    ['pug', 'setTimeout', '- setTimeout(function () {}, 0)'],
    ['pug', 'fetch', `- fetch(${JSON.stringify(url)})`],
    ['ejs', 'process', `<% process.mainModule.require('fs').${write} %>`],
    [
      'ejs',
      'this.constructor.constructor',
      `<% this.constructor.constructor('return process')().mainModule.require('fs').${write} %>`,
    ],
    [
      'ejs',
      'data constructor',
      `<% patient.constructor.constructor('return process')().mainModule.require('fs').${write} %>`,
    ],
    ['ejs', 'Function', `<% Function('return this')().process.mainModule.require('fs').${write} %>`],
    ['ejs', 'require', `<% require('fs').${write} %>`],
    ['ejs', 'dynamic import', `<% import('fs').then(function (fs) { fs.${write} }) %>`],
    ['ejs', 'fetch', `<% fetch(${JSON.stringify(url)}) %>`],
    ['ejs', 'setTimeout', '<% setTimeout(function () {}, 0) %>'],
    ['ejs', 'setInterval', '<% setInterval(function () {}, 1) %>'],
    ['ejs', 'queueMicrotask', '<% queueMicrotask(function () {}) %>'],
  ]
}

/** What a successful escape would show: the host's own answer to `id`, the server's reply, the marker's text. */
const hostId = execSync('id').toString().trim()
function assertNoTrace(t: Test, html: string, what: string) {
  t.notOk(html.includes(hostId), `${what}: the output holds no result of execSync('id')`)
  t.notMatch(html, /uid=\d+|reached|escaped|root:/, `${what}: no trace of the host in the output`)
}

t.test('escape attempts fail inside the sandbox and leave no trace on the host', async (t) => {
  rmSync(marker, { force: true })
  let calls = 0
  const server = createServer((_, res) => {
    calls++
    res.end('reached')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`

  const renderer = shared
  let rendered = 0
  for (const [engine, label, source] of attempts(url)) {
    const attempt = renderer.render(job(engine, source, { patient: { name: 'Ann' } }))
    const html = await attempt.then(
      (html) => html,
      () => null,
    )
    if (html === null) await rejection(t, attempt, 'RENDER_FAILED')
    else {
      rendered++
      assertNoTrace(t, html, `${engine} ${label}`)
    }
  }
  t.comment(`${rendered} attempts rendered, the others failed`)
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.notOk(existsSync(marker), 'no file was written')
  t.equal(calls, 0, 'no request reached the host')
})

t.test('escape attempts that catch their own failure render, and show they got nothing', async (t) => {
  rmSync(marker, { force: true })
  let calls = 0
  const server = createServer((_, res) => {
    calls++
    res.end('reached')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  // A callback that tries every way out; if a timer or a promise ever ran it, the host would see it.
  const reach = `function () { try { fetch(${JSON.stringify(url)}) } catch (e) {} try { process.mainModule.require('fs').${write} } catch (e) {} }`
  const expressions: Array<[string, string]> = [
    ['child_process', "process.mainModule.require('child_process').execSync('id')"],
    [
      'constructor chain',
      "this.constructor.constructor('return process')().mainModule.require('child_process').execSync('id')",
    ],
    [
      'data constructor',
      "patient.constructor.constructor('return process')().mainModule.require('child_process').execSync('id')",
    ],
    ['Function', "Function('return this')().process.mainModule.require('child_process').execSync('id')"],
    ['require', "require('child_process').execSync('id')"],
    ['fetch', `fetch(${JSON.stringify(url)})`],
    ['setTimeout', `setTimeout(${reach}, 0)`],
    ['setInterval', `setInterval(${reach}, 1)`],
    ['setImmediate', `setImmediate(${reach})`],
    ['queueMicrotask', `queueMicrotask(${reach})`],
    ['promise job', `Promise.resolve().then(${reach}) && 'no job ran'`],
    ['dynamic import', `import('child_process').then(function (cp) { cp.execSync('touch ${marker}') })`],
  ]
  const renderer = shared
  let rendered = 0
  for (const [label, expression] of expressions) {
    const pug = `- var out\n- try { out = String(${expression}) } catch (e) { out = 'blocked' }\np= out`
    const ejs = `<% var out; try { out = String(${expression}) } catch (e) { out = 'blocked' } %><%= out %>`
    for (const [engine, source] of [
      ['pug', pug],
      ['ejs', ejs],
    ] as const) {
      const attempt = renderer.render(job(engine, source, { patient: { name: 'Ann' } }))
      const html = await attempt.then(
        (html) => html,
        () => null,
      )
      // import() cannot even be caught in some engines: the render fails as a whole, which is fine too.
      if (html === null) {
        await rejection(t, attempt, 'RENDER_FAILED')
        continue
      }
      rendered++
      assertNoTrace(t, html, `${engine} ${label}`)
      // The only answers a sandbox without host powers can give: a failure, or a promise that never settles here.
      t.match(
        html,
        /^(<p>)?(blocked|\[object Promise\]|no job ran)(<\/p>)?$/,
        `${engine} ${label}: got nothing (${html})`,
      )
    }
  }
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.ok(rendered >= expressions.length * 2 - 2, `${rendered} of the caught attempts rendered and were checked`)
  t.notOk(existsSync(marker), 'no file was written, by no timer, promise job or import')
  t.equal(calls, 0, 'no request reached the host')
})

t.test('host and dangerous globals do not exist inside templates', async (t) => {
  const renderer = shared
  const names = [
    'process',
    'require',
    'module',
    'global',
    'Buffer',
    'setTimeout',
    'setImmediate',
    'fetch',
    'WebAssembly',
    'SharedArrayBuffer',
    'Atomics',
  ]
  const pug = await renderer.render(job('pug', names.map((name) => `| #{typeof ${name}} `).join('\n')))
  t.same(
    pug.trim().split(/\s+/),
    names.map(() => 'undefined'),
  )
  const ejs = await renderer.render(job('ejs', names.map((name) => `<%= typeof globalThis.${name} %>`).join(' ')))
  t.same(
    ejs.split(' '),
    names.map(() => 'undefined'),
  )
})

t.test('a thrown object with a hostile message getter cannot hang the host', async (t) => {
  const renderer = testRenderer(t, { timeoutMs: 300 })
  await rejection(t, renderer.render(job('ejs', '<% throw { get message() { while (true) {} } } %>')), 'RENDER_TIMEOUT')
  const failed = await rejection(
    t,
    renderer.render(job('pug', '- throw { get message() { throw new Error("again") } }')),
    'RENDER_FAILED',
  )
  t.match(failed.message, 'cannot be shown')
  await rejection(
    t,
    renderer.render(job('ejs', '<% Error.prepareStackTrace = function () { while (true) {} }; null.x %>')),
    'RENDER_FAILED',
  )
  t.equal(await renderer.render(job('pug', 'p fine')), '<p>fine</p>')
})

t.test('templates cannot break out of the function they are compiled into', async (t) => {
  const renderer = shared
  const attempts: Array<[RenderEngine, string]> = [
    ['pug', '- } }).call(this); return "escaped"; (function () { {'],
    ['pug', '- }}}}}})(); return "escaped"; function x() {{{{{{'],
    ['ejs', '<% }}} return "escaped"; function x() {{{ %>'],
  ]
  for (const [engine, source] of attempts) {
    await rejection(t, renderer.render(job(engine, source)), 'RENDER_COMPILE_FAILED')
  }
})

t.test('one render cannot leave state for the next', async (t) => {
  const renderer = shared
  const polluter = '<% Object.prototype.injected = "<b>x</b>"; globalThis.leftover = 1; String.prototype.trim = null %>'
  await renderer.render(job('ejs', polluter))
  const html = await renderer.render(
    job('ejs', '<%= typeof ({}).injected %> <%= typeof globalThis.leftover %> <%= typeof "".trim %>'),
  )
  t.equal(html, 'undefined undefined function')
})
