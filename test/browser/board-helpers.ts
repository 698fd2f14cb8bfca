import type { AddressInfo } from 'node:net'
import { networkInterfaces } from 'node:os'
import { join } from 'node:path'
import { type Browser, chromium, type Page } from 'playwright-core'
import type { Test } from 'tap'
import { buildApp } from '../../app.js'
import { defaultConfig } from '../../config.js'
import { bearer, type TestApp } from '../helper.js'

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

/**
 * The policy the page must live with: helmet's strict defaults without any 'unsafe-inline' at all
 * (styles included), whatever plugins/security-headers.ts allows today. The test adds it to the
 * policy the service sent (a browser enforces both), so an inline script, an inline style or a
 * resource from elsewhere is refused and reported on the console, where the test looks for it.
 */
export const STRICT_CSP = [
  "default-src 'self'",
  "base-uri 'self'",
  "font-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "img-src 'self'",
  "object-src 'none'",
  "script-src 'self'",
  "script-src-attr 'none'",
  "style-src 'self'",
  "connect-src 'self'",
].join('; ')

/**
 * The address a ward's screen would use: the machine's first non-loopback IPv4 address, so the
 * page is tested as `http://<ward-server>:port/board` (browsers treat loopback as secure and
 * forgive there what they refuse on a plain-http LAN address); loopback when there is none.
 */
function wardAddress(): string {
  const external = Object.values(networkInterfaces())
    .flat()
    .find((i) => i !== undefined && i.family === 'IPv4' && !i.internal)
  return external?.address ?? '127.0.0.1'
}

/**
 * A service on a database file (so it can be stopped and started again on the same data, on the
 * same port), with a read token of facility A for the board and a write token to change the ward.
 */
export async function boardServer(t: Test) {
  const config = defaultConfig({
    DATABASE_PATH: join(t.testdir(), 'board.db'),
    LOG_LEVEL: 'silent',
    RATE_LIMIT_MAX: 0,
    FEED_HEARTBEAT_MS: 1000,
  })
  const server: { app: TestApp; port: number } = { app: await buildApp(config), port: 0 }
  const make = (account: string, role: 'read' | 'write', facility: string) =>
    server.app.tokens.create({ account, role, facility, label: `board test ${account}` }).token
  const tokens = {
    viewer: make('viewer-a', 'read', 'A'),
    nurse: make('nurse-a', 'write', 'A'),
    other: make('nurse-b', 'write', 'B'),
  }
  const host = wardAddress()
  await server.app.listen({ port: 0, host })
  server.port = (server.app.server.address() as AddressInfo).port
  t.teardown(() => server.app.close())

  return {
    config,
    tokens,
    base: `http://${host}:${server.port}`,
    get app() {
      return server.app
    },
    async stop() {
      await server.app.close()
    },
    /** A change while the server is down: another process of the service on the same file. */
    async offline<T>(change: (app: TestApp) => Promise<T>): Promise<T> {
      const other = await buildApp(config)
      try {
        return await change(other)
      } finally {
        await other.close()
      }
    },
    async start() {
      server.app = await buildApp(config)
      await server.app.listen({ port: server.port, host })
    },
  }
}

export async function admit(app: TestApp, token: string, bed: string, room: string, n: number) {
  const res = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(token),
    payload: { encounter: `enc-${n}`, bed, room, occupiedBy: `patient-${n}`, provider: `dr-${n}` },
  })
  if (res.statusCode !== 200) throw new Error(`admit ${bed}: ${res.statusCode} ${res.body}`)
  return res.json() as { id: string; encounter: string; occupiedBy: string }
}

export async function discharge(app: TestApp, token: string, id: string) {
  const res = await app.inject({
    method: 'PATCH',
    url: `/ward-occupants/${id}`,
    headers: bearer(token),
    payload: { discharge: true },
  })
  if (res.statusCode !== 200) throw new Error(`discharge ${id}: ${res.statusCode} ${res.body}`)
}

/** A browser page on the board, with the strict policy, and every console error and URL it asked for. */
export async function openBoard(t: Test, base: string) {
  const browser: Browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: CHROMIUM_ARGS,
  })
  t.teardown(() => browser.close())
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } })
  const page: Page = await context.newPage()
  const problems: string[] = []
  const urls: string[] = []
  // Not problems: a refused connection while the test has stopped the server, and Chromium's note
  // that it ignores helmet's Cross-Origin-Opener-Policy on a plain-http address. A resource the
  // server answered with an error is one. (Under page.route Chromium does not fetch the favicon:
  // test/routes/board.test.ts checks /favicon.ico.)
  const expected = /Failed to load resource: net::ERR_|net::ERR_|Cross-Origin-Opener-Policy header has been ignored/
  page.on('console', (message) => {
    if (message.type() === 'error' && !expected.test(message.text())) problems.push(message.text())
  })
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`))
  page.on('request', (request) => urls.push(request.url()))
  await page.route(`${base}/board`, async (route) => {
    const response = await route.fetch()
    const sent = response.headers()['content-security-policy']
    const policy = sent ? `${sent}, ${STRICT_CSP}` : STRICT_CSP
    await route.fulfill({ response, headers: { ...response.headers(), 'content-security-policy': policy } })
  })
  await page.goto(`${base}/board`)
  // The form is shown by the page's script: it stays hidden when the script did not load.
  await page
    .locator('#signin')
    .waitFor({ timeout: 10_000 })
    .catch(() => {
      throw new Error(`the board's script did not run: ${problems.join('; ')}`)
    })
  return { page, problems, urls }
}
