import { request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { bearer, buildTestApp, type TestApp } from '../helper.js'
import { until } from '../reliability/fault-helpers.js'
import { UNREACHED_TIMEOUT_MS, whileRendering } from '../render/helpers.js'

/**
 * The print queue is bounded (RENDER_QUEUE_MAX, per facility): with the one print worker busy and
 * a facility's places taken, its next print is answered 503 RENDER_BUSY with Retry-After at once,
 * while another facility's print still waits its turn; a print whose client hangs up while it
 * waits leaves the queue. The layout stays busy for `data.holdMs` of wall time.
 */
const BUSY = '- var until = Date.now() + data.holdMs\n- while (Date.now() < until) {}\np done'

/** A new form template of `token`'s facility with the print layout `layout`: its id. */
async function templateWith(app: TestApp, token: string, layout: string): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/form-templates',
    headers: bearer(token),
    payload: { type: 'x', template: layout },
  })
  return res.json().id
}

/** An app with one print worker and RENDER_QUEUE_MAX `queueMax`; `print(holdMs)` prints the busy layout. */
async function printApp(t: Test, queueMax: number) {
  const { app, tokens } = await buildTestApp(t, {
    RENDER_WORKERS: 1,
    RENDER_QUEUE_MAX: queueMax,
    RENDER_TIMEOUT_MS: UNREACHED_TIMEOUT_MS,
  })
  const id = await templateWith(app, tokens.writeA, BUSY)
  const print = (holdMs: number) =>
    app.inject({
      method: 'POST',
      url: `/form-templates/${id}/render`,
      headers: bearer(tokens.readA),
      payload: { data: { holdMs } },
    })
  return { app, tokens, id, print }
}

/** Settles to its answer; `settled` tells whether it has. */
function tracked<T>(promise: Promise<T>) {
  const state = { settled: false, promise }
  promise.finally(() => {
    state.settled = true
  })
  return state
}

t.test("with the worker busy and a facility's places full its print is answered 503 RENDER_BUSY at once", async (t) => {
  const { app, tokens, print } = await printApp(t, 1)
  const b = await templateWith(app, tokens.writeB, 'p ward B')
  const printB = () => app.inject({ url: `/form-templates/${b}/render`, headers: bearer(tokens.writeB) })
  t.equal((await printB()).body, '<p>ward B</p>', "B's layout compiled")
  t.equal((await print(0)).body, '<p>done</p>', 'compiled, and the worker is up')

  const { held, result } = await whileRendering(print, async () => {
    const queued = tracked(print(0))
    await until(() => app.renderer.stats().waiting === 1 || queued.settled)
    const otherWard = tracked(printB())
    await until(() => app.renderer.stats().waiting === 2 || otherWard.settled)
    const refused = await print(0)
    return { queued, refused, otherWard }
  })
  const { queued, refused, otherWard } = result
  t.equal(refused.statusCode, 503)
  t.equal(refused.headers['retry-after'], '1')
  t.same(refused.json(), {
    statusCode: 503,
    error: 'Service Unavailable',
    name: 'Unavailable',
    code: 'RENDER_BUSY',
    // Its own facility's count, not the queue's (ward B's print waits too).
    message: 'every print worker is busy and 1 prints of this facility are waiting; try again',
  })
  t.equal(held.statusCode, 200, 'the running print ends as it would have')
  t.equal((await queued.promise).body, '<p>done</p>', 'the waiting one ran when the worker was free')
  t.equal((await otherWard.promise).body, '<p>ward B</p>', "another facility's print waited in its own place")
  t.ok(app.renderer.stats().refused.busy >= 1, 'counted for the metrics')
  t.same(app.renderer.stats().failures, {}, 'not as a failure of the layout')
  t.equal((await print(0)).statusCode, 200, 'a retry once the worker is free prints')
  t.equal(app.renderer.stats().waiting, 0)
})

t.test('RENDER_QUEUE_MAX 0: nothing waits; GET prints are refused the same way', async (t) => {
  const { app, tokens, print: hold } = await printApp(t, 0)
  const other = await templateWith(app, tokens.writeA, 'p other')
  const get = () => app.inject({ url: `/form-templates/${other}/render`, headers: bearer(tokens.readA) })
  t.equal((await get()).body, '<p>other</p>', 'compiled')
  t.equal((await hold(0)).statusCode, 200, 'compiled')
  // The held print must reach the worker first: should the GET win the race, the held print is the
  // one refused, it is over before the GET, and whileRendering tries both again.
  const { held, result } = await whileRendering(hold, async () => {
    await new Promise((resolve) => setTimeout(resolve, 100))
    return get()
  })
  t.equal(held.statusCode, 200)
  t.equal(result.statusCode, 503)
  t.match(result.json(), { code: 'RENDER_BUSY' })
  t.equal((await get()).body, '<p>other</p>', 'printed once the worker is free')
})

t.test('a print whose client hangs up while it waits leaves the queue, and its place is free', async (t) => {
  const { app, tokens, id, print } = await printApp(t, 1)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  t.equal((await print(0)).statusCode, 200, 'compiled')

  const { held, result } = await whileRendering(print, async () => {
    const before = app.renderer.stats().refused.cancelled
    const body = JSON.stringify({ data: { holdMs: 0 } })
    const leaving = httpRequest({
      port,
      method: 'POST',
      path: `/form-templates/${id}/render`,
      headers: { ...bearer(tokens.readA), 'content-type': 'application/json' },
    })
    const answered = tracked(new Promise((resolve) => leaving.once('response', resolve)))
    leaving.on('error', () => {}) // the hang-up below
    leaving.end(body)
    await until(() => app.renderer.stats().waiting === 1 || answered.settled)
    leaving.destroy()
    await until(() => app.renderer.stats().waiting === 0)
    const next = tracked(print(0))
    await until(() => app.renderer.stats().waiting === 1 || next.settled)
    return { next, leftQueue: app.renderer.stats().refused.cancelled - before }
  })
  t.equal(result.leftQueue, 1, 'the print of the client that hung up left the queue (counted)')
  t.equal(held.statusCode, 200)
  const next = await result.next.promise
  t.equal(next.statusCode, 200, 'the next print took the free place and was not refused')
  t.equal(app.renderer.stats().refused.busy, 0)
})
