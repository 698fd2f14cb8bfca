import { existsSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { RenderEngine } from '../../plugins/render/sandbox.js'
import { job, rejection, testRenderer } from './helpers.js'

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

  const renderer = testRenderer(t)
  for (const [engine, label, source] of attempts(url)) {
    const attempt = renderer.render(job(engine, source, { patient: { name: 'Ann' } }))
    const outcome = await attempt.then(
      () => 'rendered',
      () => 'rejected',
    )
    if (outcome === 'rejected') await rejection(t, attempt, 'RENDER_FAILED')
    else t.pass(`${engine} ${label}: rendered without reaching anything`)
  }
  await new Promise((resolve) => setTimeout(resolve, 100))
  t.notOk(existsSync(marker), 'no file was written')
  t.equal(calls, 0, 'no request reached the host')
})

t.test('host and dangerous globals do not exist inside templates', async (t) => {
  const renderer = testRenderer(t)
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
  const renderer = testRenderer(t)
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
  const renderer = testRenderer(t)
  const polluter = '<% Object.prototype.injected = "<b>x</b>"; globalThis.leftover = 1; String.prototype.trim = null %>'
  await renderer.render(job('ejs', polluter))
  const html = await renderer.render(
    job('ejs', '<%= typeof ({}).injected %> <%= typeof globalThis.leftover %> <%= typeof "".trim %>'),
  )
  t.equal(html, 'undefined undefined function')
})
