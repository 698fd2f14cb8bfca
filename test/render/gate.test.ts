import t from 'tap'
import { RenderError } from '../../render/errors.js'
import { createGate } from '../../render/gate.js'

/** A task that runs until `finish()`, noting in `ran` that it started. */
function task(name: string, ran: string[]) {
  let finish = () => {}
  const done = new Promise<void>((resolve) => {
    finish = resolve
  })
  return {
    finish: () => finish(),
    run: async () => {
      ran.push(name)
      await done
      return name
    },
  }
}

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => 'ran',
    (error: unknown) => error,
  )

t.test('past maxWaiting a run is refused at once (RENDER_BUSY, 503, retry after 1 s); the queue goes on', async (t) => {
  const gate = createGate(1, 2)
  const ran: string[] = []
  const a = task('a', ran)
  const b = task('b', ran)
  const c = task('c', ran)
  const d = task('d', ran)
  const running = gate.run(a.run)
  const waiting = [gate.run(b.run), gate.run(c.run)]
  t.equal(gate.waiting, 2)
  const refused = await refusal(gate.run(d.run))
  t.ok(refused instanceof RenderError)
  t.match(refused, { code: 'RENDER_BUSY', statusCode: 503, retryAfterSeconds: 1, message: /2 prints are waiting/ })
  t.equal(gate.waiting, 2, 'the refused run took no place')
  for (const each of [a, b, c]) each.finish()
  t.same(await Promise.all([running, ...waiting]), ['a', 'b', 'c'])
  t.same(ran, ['a', 'b', 'c'], 'in arrival order; the refused one never ran')
})

t.test('maxWaiting 0: refused whenever every worker is busy; no bound by default', async (t) => {
  const ran: string[] = []
  const none = createGate(2, 0)
  const a = task('a', ran)
  const b = task('b', ran)
  const c = task('c', ran)
  const both = [none.run(a.run), none.run(b.run)]
  t.match(await refusal(none.run(c.run)), { code: 'RENDER_BUSY' })
  a.finish()
  b.finish()
  await Promise.all(both)
  const unbounded = createGate(1)
  const many = Array.from({ length: 1000 }, (_, i) => task(`u${i}`, ran))
  const runs = many.map((each) => unbounded.run(each.run))
  t.equal(unbounded.waiting, 999)
  for (const each of many) each.finish()
  t.equal((await Promise.all(runs)).length, 1000)
})

t.test(
  'a waiting run whose caller hangs up leaves the queue and never runs; the others keep their order',
  async (t) => {
    const gate = createGate(1, 3)
    const ran: string[] = []
    const a = task('a', ran)
    const b = task('b', ran)
    const c = task('c', ran)
    const d = task('d', ran)
    const e = task('e', ran)
    const runningHangUp = new AbortController()
    const goneHangUp = new AbortController()
    const lastHangUp = new AbortController()
    const running = gate.run(a.run, runningHangUp.signal)
    const first = gate.run(b.run)
    const gone = gate.run(c.run, goneHangUp.signal)
    const last = gate.run(d.run, lastHangUp.signal)
    t.equal(gate.waiting, 3)
    goneHangUp.abort()
    t.match(await refusal(gone), { code: 'RENDER_CANCELLED', statusCode: 499 })
    t.equal(gate.waiting, 2, 'it left the queue')
    const next = gate.run(e.run)
    t.equal(gate.waiting, 3, 'its place went to the next caller')
    runningHangUp.abort()
    for (const each of [a, b, d, e]) each.finish()
    t.same(
      await Promise.all([running, first, last, next]),
      ['a', 'b', 'd', 'e'],
      'a run already running is not stopped',
    )
    t.same(ran, ['a', 'b', 'd', 'e'], 'the one that left never ran')
    lastHangUp.abort()
    t.equal(gate.waiting, 0, 'a hang-up after the run started changes nothing')
  },
)

t.test('a caller that hung up before it came is refused without waiting or running', async (t) => {
  const gate = createGate(1, 1)
  const ran: string[] = []
  const gone = new AbortController()
  gone.abort()
  t.match(await refusal(gate.run(task('a', ran).run, gone.signal)), { code: 'RENDER_CANCELLED' })
  t.same(ran, [])
  const b = task('b', ran)
  const running = gate.run(b.run)
  b.finish()
  t.equal(await running, 'b', 'the worker was not taken')
})
