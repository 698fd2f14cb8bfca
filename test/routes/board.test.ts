import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { PROJECT_ROOT } from '../../lib/product-files.js'
import { boardRoot, FAVICON_FILE } from '../../routes/board/index.js'
import { buildTestApp } from '../helper.js'

const BOARD_ROOT = boardRoot()
const FILES = readdirSync(BOARD_ROOT)

t.test('GET /board serves the page without a token, under a strict policy', async (t) => {
  const { app } = await buildTestApp(t)
  const res = await app.inject({ url: '/board' })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^text\/html; charset=utf-8/)
  t.equal(res.body, readFileSync(join(BOARD_ROOT, 'index.html'), 'utf8'), 'the file as it is')
  t.equal(res.headers['cache-control'], 'no-cache')
  t.equal(res.headers['x-content-type-options'], 'nosniff')
  const csp = String(res.headers['content-security-policy'])
  const scriptSrc = /(?:^|;)\s*script-src ([^;]*)/.exec(csp)?.[1]
  t.equal(scriptSrc, "'self'", 'scripts from this origin only, nothing inline')
  t.match(csp, /frame-ancestors 'none'/)
  t.match(csp, /connect-src 'self'|default-src 'self'/, 'the page may only talk to this service')
  // docs/BOARD.md and docs/SECURITY.md: no inline style, no font or style from elsewhere.
  const directive = (name: string) => new RegExp(`(?:^|;)\\s*${name} ([^;]*)`).exec(csp)?.[1]
  t.equal(directive('style-src'), "'self'", 'styles from this origin only, nothing inline')
  t.equal(directive('font-src'), "'self'", 'fonts from this origin only (no https:, no data:)')
  t.notMatch(csp, /unsafe-inline|unsafe-eval/, 'nothing inline anywhere in the policy')
  // A ward server is reached as http://<host>:3000: an upgrade would send the page's own script
  // to https, where nothing answers (test/browser/board.browser.ts shows it on a LAN address).
  t.notMatch(csp, /upgrade-insecure-requests/, 'no upgrade to https on a plain-http service')
})

t.test('the page, its script modules and its style are files of public/board, and nothing else is', async (t) => {
  const { app } = await buildTestApp(t)
  for (const [file, type] of [
    ['index.html', /^text\/html/],
    ['board.js', /^(application|text)\/javascript/],
    ['board.css', /^text\/css/],
  ] as const) {
    const res = await app.inject({ url: `/board/${file}` })
    t.equal(res.statusCode, 200, file)
    t.match(res.headers['content-type'], type, `${file}: ${res.headers['content-type']}`)
    t.equal(res.headers['cache-control'], 'no-cache', `${file}: asked again on each load`)
  }
  for (const url of [
    '/board/nope.js',
    '/board/../package.json',
    '/board/%2e%2e/package.json',
    '/board/..%2fschema.sql',
  ]) {
    const res = await app.inject({ url })
    t.equal(res.statusCode, 404, `${url}: 404`)
    t.notMatch(res.body, /facility-service|CREATE TABLE/, `${url}: nothing of the project`)
  }
})

t.test('the page holds no inline script or style and loads nothing from elsewhere', async (t) => {
  const html = readFileSync(join(BOARD_ROOT, 'index.html'), 'utf8')
  t.notMatch(html, /<script(?![^>]*\ssrc=)[^>]*>/, 'every script has a src')
  t.notMatch(html, /\sstyle=|<style/, 'no inline style')
  t.notMatch(html, /\son[a-z]+=/i, 'no inline event handler')
  for (const file of FILES) {
    const text = readFileSync(join(BOARD_ROOT, file), 'utf8')
    t.notMatch(text, /https?:\/\/|\/\/[a-z0-9.-]+\.[a-z]{2,}\//i, `${file}: no address of another site`)
    if (file.endsWith('.js')) {
      // Text from the database reaches the page through textContent only.
      t.notMatch(
        text,
        /innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function/,
        `${file}: no HTML from strings`,
      )
      t.notMatch(text, /localStorage/, `${file}: the token is kept for the tab only`)
    }
  }
})

t.test('/favicon.ico is a small SVG icon, linked by the board, without a token', async (t) => {
  const { app } = await buildTestApp(t)
  for (const method of ['GET', 'HEAD'] as const) {
    const res = await app.inject({ method, url: '/favicon.ico' })
    t.equal(res.statusCode, 200, method)
    t.equal(res.headers['content-type'], 'image/svg+xml', `${method}: an SVG, said so`)
    t.equal(res.headers['x-content-type-options'], 'nosniff')
    t.equal(res.headers['cache-control'], 'public, max-age=86400', 'kept a day, not asked for on every page')
  }
  const icon = (await app.inject('/favicon.ico')).body
  t.equal(icon, readFileSync(join(PROJECT_ROOT, FAVICON_FILE), 'utf8'))
  t.match(icon, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/)
  t.notMatch(icon, /<script|\son[a-z]+=|href=/i, 'nothing active and nothing fetched in the icon')
  t.ok(Buffer.byteLength(icon) < 2048, 'small')
  const html = readFileSync(join(BOARD_ROOT, 'index.html'), 'utf8')
  t.match(html, '<link rel="icon" href="/favicon.ico" type="image/svg+xml">', 'the board names its icon')
})

t.test('/board/ (the slash people type) leads to the board', async (t) => {
  const { app } = await buildTestApp(t)
  for (const [url, location] of [
    ['/board/', '/board'],
    ['/board/?facility=A', '/board?facility=A'],
  ] as const) {
    const res = await app.inject({ url })
    t.equal(res.statusCode, 301, url)
    t.equal(res.headers.location, location, `${url}: to ${location}`)
  }
  t.equal((await app.inject('/board')).statusCode, 200)
  t.equal((await app.inject('/board//')).statusCode, 404, 'no other spelling is invented')
})
