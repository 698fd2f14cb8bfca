import { createServer } from 'node:net'
import { join } from 'node:path'
import { type Browser, chromium, type Page } from 'playwright-core'
import t from 'tap'
import { buildApp } from '../../app.js'
import { bearer } from '../helper.js'
import { BOARD_CLIENT, startProvider } from '../oidc/provider.js'
import { oidcConfig } from '../oidc/setup.js'
import { admit, CHROMIUM_ARGS } from './board-helpers.js'

// A nurse opens the bed board, signs in with her hospital account (oidc-provider's own login form,
// filled in by the test), and sees her ward live; the token stays in the page's memory, is
// renewed before it expires, and is gone after signing out. Pasting a service token still works.

async function freePort(): Promise<number> {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const { port } = probe.address() as { port: number }
  await new Promise((resolve) => probe.close(resolve))
  return port
}

async function until(page: Page, expression: string, what: string, ms = 20_000) {
  const deadline = Date.now() + ms
  while (!(await page.evaluate(expression).catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

t.test('sign in with the provider, live board, renewal, sign-out', async (t) => {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  // Short tokens, so the renewal happens within the test (the board renews after 5 s at the least).
  const provider = await startProvider({ redirectUris: [`${base}/board`], accessTokenTtl: 20 })
  t.teardown(() => provider.close())
  provider.claims.set('nurse.ann', { realm_access: { roles: ['ward-viewer'] }, facility: 'A' })
  const config = oidcConfig(provider, {
    DATABASE_PATH: join(t.testdir(), 'board.db'),
    OIDC_BOARD_CLIENT_ID: BOARD_CLIENT,
    OIDC_BOARD_SCOPE: 'openid',
    FEED_HEARTBEAT_MS: 1000,
  })
  const app = await buildApp(config)
  t.teardown(() => app.close())
  await app.listen({ port, host: '127.0.0.1' })
  const nurse = app.tokens.create({ account: 'nurse-a', role: 'write', facility: 'A' }).token
  const nurseB = app.tokens.create({ account: 'nurse-b', role: 'write', facility: 'B' }).token
  await admit(app, nurse, 'B-1', 'R-1', 1)
  await admit(app, nurseB, 'B-9', 'R-9', 9)

  const browser: Browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: CHROMIUM_ARGS,
  })
  t.teardown(() => browser.close())
  const page = await (await browser.newContext()).newPage()
  const problems: string[] = []
  const grants: string[] = []
  page.on('pageerror', (error) => problems.push(error.message))
  page.on('console', (m) => {
    if (m.type() === 'error' && !/Failed to load resource|favicon/.test(m.text())) problems.push(m.text())
  })
  page.on('request', (request) => {
    const grant = /grant_type=([a-z_]+)/.exec(request.postData() ?? '')
    if (request.url().startsWith(provider.issuer) && grant) grants.push(grant[1] as string)
  })
  // The page runs under the service's own policy, not one added by interception: Chromium gives a
  // response fulfilled by the test no address, takes the page for a public one, and refuses its
  // requests to the provider on loopback (Local Network Access). The policy allows the issuer's origin.
  const policy = (await app.inject({ url: '/board' })).headers['content-security-policy'] as string
  t.match(policy, `connect-src 'self' ${provider.issuer}`)
  t.match(policy, "script-src 'self';")
  await page.goto(`${base}/board`)
  await page.locator('#provider-signin').waitFor({ timeout: 10_000 })
  await page.locator('#provider-signin').click()
  // oidc-provider's login form, then its consent page.
  await page.locator('input[name=login]').fill('nurse.ann')
  await page.locator('input[name=password]').fill('any password')
  await page.locator('button:has-text("Sign-in")').click()
  await page.locator('button:has-text("Continue")').click()
  await page.waitForURL(`${base}/board`)
  await until(page, `document.querySelectorAll('.bed').length === 1`, "ward A's bed")
  t.same(
    await page.evaluate(`[...document.querySelectorAll('.bed')].map((n) => n.dataset.bed)`),
    ['B-1'],
    "her facility's beds only",
  )
  t.equal(page.url(), `${base}/board`, 'the code is gone from the address')
  t.same(grants, ['authorization_code'])
  const stored = (await page.evaluate('JSON.stringify([sessionStorage, localStorage, document.cookie])')) as string
  t.notMatch(stored, /eyJ/, 'no token in storage or cookies: memory only')

  await admit(app, nurse, 'B-2', 'R-1', 2)
  await until(page, `document.querySelectorAll('.bed').length === 2`, 'the new admission, live')

  // The page's own timer renews the token; the test waits for the grant it sends.
  const renewed = Date.now() + 30_000
  while (!grants.includes('refresh_token') && Date.now() < renewed) await new Promise((r) => setTimeout(r, 250))
  t.ok(grants.includes('refresh_token'), 'the token was renewed before it expired')
  await admit(app, nurse, 'B-3', 'R-1', 3)
  await until(page, `document.querySelectorAll('.bed').length === 3`, 'live with the renewed token')

  await page.locator('#signout').click()
  await until(page, `!document.getElementById('signin').hidden`, 'the sign-in form')
  await page.reload()
  await page.locator('#provider-signin').waitFor()
  t.equal(await page.evaluate(`document.getElementById('board').hidden`), true, 'signed out: nothing kept')

  // A screen with no person: a pasted service token, as before.
  await page.locator('#token').fill(nurse)
  await page.locator('#signin button[type=submit]').click()
  await until(page, `document.querySelectorAll('.bed').length === 3`, 'the board with a pasted token')
  t.same(problems, [], 'no errors in the page')
  t.equal((await app.inject({ url: '/board/sign-in' })).json().provider.clientId, BOARD_CLIENT)
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(nurse) })).statusCode, 200)
})
