import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import t from 'tap'
import { bearer, type TestApp } from '../helper.js'
import { admit, boardServer, discharge, openBoard } from './board-helpers.js'

/** The words and symbols docs/BOARD.md promises for each state. */
const WORDS: Record<string, string> = {
  occupied: 'Occupied',
  'on-leave': 'On leave',
  expected: 'Expected',
  free: 'Free',
  recent: 'Recently discharged',
  cleaning: 'Cleaning',
  closed: 'Closed',
  contaminated: 'Contaminated',
  isolated: 'Isolated',
}
const CYCLE = Object.keys(WORDS)

const HOUSEKEEPING = new Set(['cleaning', 'closed', 'contaminated', 'isolated'])

/** `count` beds of `facility` in rooms of four, cycling through every state. */
async function seed(app: TestApp, facility: string, count: number) {
  const nurse = app.tokens.create({ account: `nurse-${facility}`, role: 'write', facility, label: 'seed' }).token
  const actor = { tokenId: 'seed', account: `nurse-${facility}`, role: 'write' as const, facility }
  for (let i = 0; i < count; i++) {
    const bed = `B-${i + 1}`
    const room = `R-${Math.floor(i / 4) + 1}`
    const state = CYCLE[i % CYCLE.length] as string
    const n = 1000 * facility.charCodeAt(0) + i
    if (state === 'occupied' || state === 'on-leave' || state === 'recent') {
      const stay = await admit(app, nurse, bed, room, n)
      if (state === 'recent') await discharge(app, nurse, stay.id)
      if (state === 'on-leave')
        await app.writes.run(() =>
          app.repos.bedStates.inTransaction.mark(actor, { id: stay.id, facility, bed }, 'on-leave', Date.now()),
        )
      if (state === 'occupied' && i % 2 === 0)
        await app.writes.run(() =>
          app.repos.bedStates.inTransaction.mark(
            actor,
            { id: stay.id, facility, bed },
            'discharge-expected',
            Date.now(),
          ),
        )
      continue
    }
    app.repos.beds.add({ facility, bed, room })
    if (state === 'expected')
      await app.writes.run(() =>
        app.repos.bedStates.inTransaction.expect(actor, facility, bed, `enc-x${n}`, 'admission', Date.now()),
      )
    if (HOUSEKEEPING.has(state)) {
      const res = await app.inject({
        method: 'PUT',
        url: `/beds/${bed}/state`,
        headers: bearer(nurse),
        payload: { state, note: 'seeded' },
      })
      if (res.statusCode !== 200) throw new Error(res.body)
    }
  }
}

async function until(page: Page, expression: string, what: string, ms = 15_000) {
  const deadline = Date.now() + ms
  while (!(await page.evaluate(expression))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

interface Layout {
  scrollHeight: number
  scrollWidth: number
  innerHeight: number
  innerWidth: number
  outside: string[]
  clipped: string[]
  states: Record<string, { word: string; icon: string }>
  roomsWidth: number
}

const LAYOUT = `(() => {
  const outside = [], clipped = [], states = {}
  for (const card of document.querySelectorAll('.bed')) {
    const r = card.getBoundingClientRect()
    if (r.left < 0 || r.top < 0 || r.right > innerWidth || r.bottom > innerHeight) outside.push(card.dataset.bed)
    const line = card.querySelector('.bed-status')
    const status = line.getBoundingClientRect()
    const word = card.querySelector('.state')
    if (status.bottom > r.bottom || line.scrollWidth > line.clientWidth + 1) clipped.push(card.dataset.bed)
    states[card.dataset.state] = { word: word.textContent, icon: card.querySelector('.icon').textContent }
  }
  return {
    scrollHeight: document.documentElement.scrollHeight, scrollWidth: document.documentElement.scrollWidth,
    innerHeight, innerWidth, outside, clipped, states,
    roomsWidth: document.getElementById('rooms').getBoundingClientRect().width,
  }
})()`

const shots = mkdtempSync(join(tmpdir(), 'bed-board-screens-'))
t.comment(`screenshots: ${shots}`)

for (const [width, height, count, facility] of [
  [1920, 1080, 40, 'CORRIDOR'],
  [1280, 800, 24, 'TABLET'],
] as const) {
  t.test(`${count} beds in mixed states fit a ${width}×${height} screen without scrolling`, async (t) => {
    const server = await boardServer(t)
    await seed(server.app, facility, count)
    const viewer = server.app.tokens.create({ account: 'screen', role: 'read', facility, label: 'screen' }).token
    const { page, problems } = await openBoard(t, server.base)
    await page.setViewportSize({ width, height })
    await page.locator('#token').fill(viewer)
    await page.locator('#signin button[type=submit]').click()
    await until(page, `document.querySelectorAll('.bed').length === ${count}`, `${count} beds`)
    await until(page, `document.getElementById('count-used').textContent !== '–'`, 'the counts')
    const layout = (await page.evaluate(LAYOUT)) as Layout
    await page.screenshot({ path: join(shots, `board-${width}x${height}-${count}-beds.png`) })
    t.ok(
      layout.scrollHeight <= layout.innerHeight,
      `no vertical scrolling (${layout.scrollHeight} <= ${layout.innerHeight})`,
    )
    t.ok(
      layout.scrollWidth <= layout.innerWidth,
      `no horizontal scrolling (${layout.scrollWidth} <= ${layout.innerWidth})`,
    )
    t.same(layout.outside, [], 'every bed card inside the viewport')
    t.same(layout.clipped, [], "every card's state line shown whole")
    for (const [state, word] of Object.entries(WORDS)) {
      t.equal(layout.states[state]?.word, word, `${state}: the word "${word}"`)
      t.ok(layout.states[state]?.icon, `${state}: a symbol`)
    }
    t.ok(layout.roomsWidth >= width - 40, 'the notifications panel takes none of the beds’ width')
    t.notOk(await page.locator('#notifications').isVisible(), 'closed on a corridor screen until asked for')
    t.match(
      (await page.locator('.bed[data-state="occupied"]').first().textContent()) ?? '',
      /Discharge expected/,
      'a pending discharge shows on its bed',
    )
    t.match(
      (await page.locator('.bed[data-state="closed"]').first().textContent()) ?? '',
      /✎ seeded/,
      "the staff's note shows on its bed",
    )
    // Opened, the notifications lie over the beds: the beds do not move.
    const before = await page.locator('.bed').first().boundingBox()
    await page.locator('#notes-toggle').click()
    t.ok(await page.locator('#notifications').isVisible(), 'opened')
    t.same(await page.locator('.bed').first().boundingBox(), before, 'the beds stay where they are')
    const open = (await page.evaluate(LAYOUT)) as Layout
    t.ok(open.scrollHeight <= open.innerHeight, 'still no scrolling')
    await page.screenshot({ path: join(shots, `board-${width}x${height}-notifications.png`) })
    t.same(problems, [], 'no console errors')
  })
}
