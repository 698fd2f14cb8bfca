import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import t from 'tap'
import { PROJECT_ROOT } from '../../lib/product-files.js'
import { admit, boardServer, discharge, openBoard } from './board-helpers.js'

// The page's own code runs in the browser; these expressions are handed to it as text (this
// project type-checks against Node's types, not the DOM's).
// Polled from here: waitForFunction would evaluate the text inside the page, which its policy forbids.
async function until(page: Page, expression: string, what: string, ms = 10_000) {
  const deadline = Date.now() + ms
  while (!(await page.evaluate(expression))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
const text = async (page: Page) => (await page.locator('body').textContent()) ?? ''
const beds = (page: Page) =>
  page.evaluate(`[...document.querySelectorAll('.bed')].map((n) => [n.dataset.room, n.dataset.bed, n.dataset.state])`)
const counts = (page: Page) =>
  page.evaluate(`['count-used', 'count-free', 'count-discharged'].map((id) => document.getElementById(id).textContent)`)
// The counts are drawn once the lists (and the day's discharges) are in, a moment after the beds:
// wait for them, then compare (a count that never becomes right times out and fails).
async function countsAre(page: Page, expected: string[]) {
  const want = JSON.stringify(expected)
  const read = `JSON.stringify(['count-used', 'count-free', 'count-discharged'].map((id) => document.getElementById(id).textContent))`
  await until(page, `${read} === ${JSON.stringify(want)}`, `the counts ${want}`).catch(() => undefined)
  return counts(page)
}
// Every bed's node and redraw count, kept in the page to compare with after a change.
const mark = (page: Page) =>
  page.evaluate(
    `window.marked = new Map([...document.querySelectorAll('.bed')].map((n) => [n.dataset.bed, { node: n, redraws: n.dataset.redraws }]))`,
  )
/** Beds whose node was replaced, and beds that were redrawn, since mark(). */
const changedSinceMark = (page: Page) =>
  page.evaluate(`(() => {
    const replaced = [], redrawn = []
    for (const [bed, { node, redraws }] of window.marked) {
      const now = document.querySelector('.bed[data-bed="' + bed + '"]')
      if (now !== node) replaced.push(bed)
      else if (now.dataset.redraws !== redraws) redrawn.push(bed)
    }
    return { replaced, redrawn }
  })()`)
const IDS = /enc-\d|patient-\d|dr-\d|nurse-|viewer-/

t.test('the bed board: sign in, live changes, privacy, notifications, resume after an outage', async (t) => {
  const server = await boardServer(t)
  const { tokens } = server
  await admit(server.app, tokens.nurse, 'B-1', 'R-1', 1)
  const two = await admit(server.app, tokens.nurse, 'B-2', 'R-1', 2)
  await discharge(server.app, tokens.nurse, two.id)
  const ten = await admit(server.app, tokens.nurse, 'B-10', 'R-2', 3)
  await admit(server.app, tokens.other, 'B-1', 'R-9', 99) // facility B: never on A's board

  const { page, problems, urls } = await openBoard(t, server.base)
  await page.locator('#token').fill(tokens.viewer)
  await page.locator('#signin button[type=submit]').click()
  await until(page, `document.querySelectorAll('.bed').length === 3`, 'the seeded beds')
  await until(page, `document.getElementById('count-discharged').textContent === '1'`, 'the counts')
  t.same(
    await beds(page),
    [
      ['R-1', 'B-1', 'occupied'],
      ['R-1', 'B-2', 'recent'],
      ['R-2', 'B-10', 'occupied'],
    ],
    'rooms with their beds, in order; a bed stays after its discharge, marked',
  )
  t.same(await countsAre(page, ['2', '1', '1']), ['2', '1', '1'], 'in use, free, discharges today')
  t.equal(
    await page.evaluate(`sessionStorage.getItem('bed-board.token')`),
    tokens.viewer,
    'the token is kept for the tab',
  )
  await until(page, `document.querySelectorAll('#notification-list li').length === 4`, 'the unread notifications')

  await t.test('privacy (on by default) hides every id, notification texts included', async (t) => {
    t.notMatch(await text(page), IDS, 'no ids on screen')
    await page.locator('#privacy').click()
    const shown = await text(page)
    t.match(shown, /Encounter enc-1\b/, 'privacy off: the encounter of a bed')
    t.equal(await page.locator('.bed[data-bed="B-1"] .bed-encounter').textContent(), 'Encounter enc-1')
    t.equal(await page.locator('.bed[data-bed="B-1"] .bed-provider').textContent(), 'Provider dr-1', 'and its provider')
    t.match((await page.locator('#notification-list').textContent()) ?? '', /enc-3/, 'and in a notification text')
    await page.locator('#privacy').click()
    t.notMatch(await text(page), IDS, 'privacy on again: no ids')
  })

  await t.test('a change made over HTTP appears without a reload, only its bed redrawn', async (t) => {
    await mark(page)
    await admit(server.app, tokens.nurse, 'B-2', 'R-1', 4)
    await until(page, `document.querySelector('.bed[data-bed="B-2"]').dataset.state === 'occupied'`, 'B-2 occupied')
    t.same(await changedSinceMark(page), { replaced: [], redrawn: ['B-2'] }, 'admit: only B-2 redrawn, in place')
    t.same(await countsAre(page, ['3', '0', '1']), ['3', '0', '1'])

    await mark(page)
    await discharge(server.app, tokens.nurse, ten.id)
    await until(page, `document.querySelector('.bed[data-bed="B-10"]').dataset.state === 'recent'`, 'B-10 free')
    await until(page, `document.getElementById('count-discharged').textContent === '2'`, 'two discharges')
    t.same(await changedSinceMark(page), { replaced: [], redrawn: ['B-10'] }, 'discharge: only B-10 redrawn')
    t.same(await countsAre(page, ['2', '1', '2']), ['2', '1', '2'])
    t.match(
      (await page.locator('.bed[data-bed="B-10"]').textContent()) ?? '',
      /Recently discharged/,
      'a text, not only a colour',
    )

    await admit(server.app, tokens.other, 'B-7', 'R-1', 98) // facility B again
    await admit(server.app, tokens.nurse, 'B-3', 'R-2', 5)
    await until(page, `document.querySelector('.bed[data-bed="B-3"]') !== null`, 'a new bed')
    t.same(
      (await beds(page)) as unknown[],
      [
        ['R-1', 'B-1', 'occupied'],
        ['R-1', 'B-2', 'occupied'],
        ['R-2', 'B-3', 'occupied'],
        ['R-2', 'B-10', 'recent'],
      ],
      'a new bed takes its place in its room; another facility’s bed never shows',
    )
  })

  await t.test('a notification is marked seen with a click', async (t) => {
    const seen = () =>
      server.app.db.prepare(`SELECT count(*) AS n FROM notification_seen WHERE account = 'viewer-a'`).get() as {
        n: number
      }
    const before = await page.locator('#notification-list li').count()
    t.equal(seen().n, 0)
    t.notOk(await page.locator('#notifications').isVisible(), 'the panel opens only when asked for')
    await page.locator('#notes-toggle').click()
    t.equal(await page.locator('#notes-toggle').getAttribute('aria-expanded'), 'true')
    await page.locator('#notification-list li button').first().click()
    await until(page, `document.querySelectorAll('#notification-list li').length === ${before - 1}`, 'one less unread')
    t.equal(seen().n, 1, 'the service recorded the mark for the signed-in account')
    t.equal((await page.locator('#unread-count').textContent()) ?? '', String(before - 1))
    await page.locator('#notes-toggle').click()
    t.notOk(await page.locator('#notifications').isVisible(), 'and closes again')
  })

  await t.test('after an outage the board resumes by event id and shows what it missed', async (t) => {
    await mark(page)
    await server.stop()
    await until(page, `!document.getElementById('offline').hidden`, 'the offline banner')
    await server.offline((app) => admit(app, tokens.nurse, 'B-4', 'R-3', 6))
    t.ok(await page.locator('#offline').isVisible(), 'still offline while the server is down')
    await server.start()
    await until(page, `document.querySelector('.bed[data-bed="B-4"]') !== null`, 'the change made while down')
    await until(page, `document.getElementById('offline').hidden`, 'the banner gone')
    t.same(await changedSinceMark(page), { replaced: [], redrawn: [] }, 'resumed, not reloaded: every other bed kept')
    t.same(await countsAre(page, ['4', '1', '2']), ['4', '1', '2'])
    t.notOk(await page.locator('#problem').isVisible(), 'no problem reported once back')
  })

  await t.test('when its position is no longer kept, the board reloads its lists (reset)', async (t) => {
    await mark(page)
    await server.stop()
    await until(page, `!document.getElementById('offline').hidden`, 'the offline banner')
    await server.offline(async (app) => {
      const occupant = await admit(app, tokens.nurse, 'B-5', 'R-3', 8)
      await discharge(app, tokens.nurse, occupant.id)
      // As if the retention had pruned everything the page has not seen yet.
      app.db.prepare('UPDATE feed_state SET pruned_through = (SELECT max(seq) FROM feed_events)').run()
    })
    await server.start()
    await until(
      page,
      `document.querySelector('.bed[data-bed="B-5"]')?.dataset.state === 'recent'`,
      'B-5 after a reload',
    )
    await until(page, `document.getElementById('offline').hidden`, 'the banner gone')
    const { replaced } = (await changedSinceMark(page)) as { replaced: string[] }
    t.equal(replaced.length, 5, 'reloaded: every bed drawn anew')
    t.same(await countsAre(page, ['4', '2', '3']), ['4', '2', '3'])
  })

  await t.test('keyboard: beds and buttons take focus, arrows move between beds', async (t) => {
    await page.locator('.bed').first().focus()
    await page.keyboard.press('ArrowRight')
    t.equal(await page.evaluate(`document.activeElement.dataset.bed`), 'B-2', 'arrow right: the next bed')
    await page.keyboard.press('End')
    t.equal(await page.evaluate(`document.activeElement.dataset.bed`), 'B-5', 'End: the last bed')
    await page.keyboard.press('Home')
    t.equal(await page.evaluate(`document.activeElement.dataset.bed`), 'B-1', 'Home: the first bed')
    await page.keyboard.press('Tab')
    t.equal(await page.evaluate(`document.activeElement.dataset.bed`), 'B-2', 'Tab: the next bed too')
    const outline = await page.evaluate(`getComputedStyle(document.activeElement).outlineStyle`)
    t.equal(outline, 'solid', 'keyboard focus is visible')
    t.equal(await page.locator('#announcer').getAttribute('aria-live'), 'polite')
    t.match((await page.locator('#announcer').textContent()) ?? '', /^Bed B-\d+: (occupied|free|recently discharged)$/)
  })

  const artifacts = join(PROJECT_ROOT, 'test', 'artifacts')
  mkdirSync(artifacts, { recursive: true })
  await page.screenshot({ path: join(artifacts, 'board.png'), fullPage: true })

  await t.test('text from the database is shown as text, never as markup', async (t) => {
    const markup = '<img src=x data-injected>'
    await admit(server.app, tokens.nurse, `B-${markup}`, `R-<b data-injected>9</b>`, 7)
    await until(page, `document.querySelectorAll('.bed').length === 7`, 'the bed with markup in its name')
    t.equal(await page.locator('[data-injected]').count(), 0, 'no element made from the text')
    t.match(await text(page), `Bed B-${markup}`, 'the text as it is')
    t.match(await text(page), 'Room R-<b data-injected>9</b>')
  })

  await page.locator('#signout').click()
  t.ok(await page.locator('#signin').isVisible(), 'signed out: the sign-in form')
  t.equal(await page.evaluate(`sessionStorage.length`), 1, 'only the privacy setting is left in the tab')
  t.equal(await page.locator('.bed').count(), 0, 'the board is cleared')
  t.notOk(
    urls.some((url) => url.includes(tokens.viewer)),
    'the token is never in a URL',
  )
  t.same(problems, [], 'no console errors (no policy violation, no answer with an error)')

  // The address typed with a slash opens the same board.
  await page.goto(`${server.base}/board/`)
  t.equal(new URL(page.url()).pathname, '/board', '/board/ leads to /board')
  await page.locator('#signin').waitFor({ timeout: 10_000 })
  t.same(problems, [], 'and it works there')
})
