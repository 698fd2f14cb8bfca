import { chromium } from 'playwright-core'
import t from 'tap'
import { listeningApp } from '../feed/helpers.js'
import { bearer } from '../helper.js'
import { CHROMIUM_ARGS } from './board-helpers.js'

// What the page script uses of the browser (this project type-checks against Node's types, not the DOM's).
interface PageEvent {
  lastEventId: string
  data: string
}
interface PageEventSource {
  readyState: number
  addEventListener(type: string, listener: (event: PageEvent) => void, options?: { once: boolean }): void
}
interface Page {
  received: { type: string; id: string; data: string }[]
  source: PageEventSource
  EventSource: new (url: string) => PageEventSource
}

/**
 * A real browser's EventSource, which cannot send an Authorization header, opens the feed with a
 * ticket and receives a discharge made over HTTP a moment later.
 */
t.test('a browser opens the feed with a ticket and sees a discharge made over HTTP', async (t) => {
  const { app, tokens, base } = await listeningApp(t)
  const admitted = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(tokens.writeA),
    payload: { encounter: 'enc-7', bed: 'B-7', occupiedBy: 'patient-7' },
  })
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: CHROMIUM_ARGS,
  })
  t.teardown(() => browser.close())
  const page = await browser.newPage()
  // A page of the service's own origin (the feed allows connections to 'self' only).
  await page.goto(`${base}/health`)
  const opened = await page.evaluate(async (token) => {
    const res = await fetch('/events/tickets', { method: 'POST', headers: { authorization: `Bearer ${token}` } })
    const { ticket } = (await res.json()) as { ticket: string }
    const w = globalThis as unknown as Page
    w.received = []
    w.source = new w.EventSource(`/events?ticket=${encodeURIComponent(ticket)}&resources=ward-occupants`)
    for (const type of ['ready', 'ward-occupants patched']) {
      w.source.addEventListener(type, (event) => w.received.push({ type, id: event.lastEventId, data: event.data }))
    }
    await new Promise((resolve) => w.source.addEventListener('ready', resolve, { once: true }))
    return w.source.readyState
  }, tokens.readA)
  t.equal(opened, 1, 'EventSource is OPEN')

  const discharged = await app.inject({
    method: 'PATCH',
    url: `/ward-occupants/${admitted.json().id}`,
    headers: bearer(tokens.writeA),
    payload: { discharge: true },
  })
  await page.waitForFunction(() => (globalThis as unknown as Page).received.length >= 2, null, {
    timeout: 10_000,
  })
  const received = await page.evaluate(() => (globalThis as unknown as Page).received)
  t.equal(received[1]?.type, 'ward-occupants patched')
  t.same(JSON.parse(received[1]?.data as string), discharged.json(), 'the record as the API answered the discharge')
})
