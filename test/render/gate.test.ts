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

/** Lets the runs the gate started begin, then finishes the one running, until all named have run. */
async function finishInTurn(tasks: Record<string, ReturnType<typeof task>>, ran: string[], count: number) {
  for (let i = 0; i < count; i++) {
    await new Promise((resolve) => setImmediate(resolve))
    const running = ran[i]
    if (running === undefined) throw new Error(`only ${ran.join(', ')} ran`)
    tasks[running]?.finish()
  }
}

t.test(
  "past maxWaiting of its facility a run is refused at once (503, retry after 1 s); others' still wait",
  async (t) => {
    const gate = createGate(1, 2)
    const ran: string[] = []
    const tasks = Object.fromEntries(['a', 'b', 'c', 'd', 'e'].map((name) => [name, task(name, ran)]))
    const run = (name: string, owner: string) => gate.run((tasks[name] as ReturnType<typeof task>).run, { owner })
    const runs = [run('a', 'A'), run('b', 'A'), run('c', 'A'), run('e', 'B')]
    t.equal(gate.waiting, 3, "B's run waits: the places are each facility's own")
    const refused = await refusal(run('d', 'A'))
    t.ok(refused instanceof RenderError)
    t.match(refused, {
      code: 'RENDER_BUSY',
      statusCode: 503,
      retryAfterSeconds: 1,
      // A's own count, not the queue's (B's run waits too): nothing of another facility.
      message: 'every print worker is busy and 2 prints of this facility are waiting; try again',
    })
    t.equal(gate.waiting, 3, 'the refused run took no place')
    await finishInTurn(tasks, ran, 4)
    t.same(await Promise.all(runs), ['a', 'b', 'c', 'e'])
    t.same(
      ran,
      ['a', 'b', 'e', 'c'],
      "the facilities took turns; the refused one never ran (B's went before A's second)",
    )
  },
)

t.test('maxWaiting 0: refused whenever every worker is busy; no bound by default', async (t) => {
  const ran: string[] = []
  const none = createGate(2, 0)
  const [a, b, c] = [task('a', ran), task('b', ran), task('c', ran)]
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

t.test('a waiting run whose caller hangs up leaves the queue and never runs; the rest keep their order', async (t) => {
  const gate = createGate(1, 3)
  const ran: string[] = []
  const tasks = Object.fromEntries(['a', 'b', 'c', 'd', 'e'].map((name) => [name, task(name, ran)]))
  const hangUps = Object.fromEntries(['b', 'c', 'd'].map((name) => [name, new AbortController()]))
  const run = (name: string) =>
    gate.run((tasks[name] as ReturnType<typeof task>).run, { owner: 'A', signal: hangUps[name]?.signal })
  const runs = [run('a'), run('b')]
  const gone = run('c')
  runs.push(run('d'))
  t.equal(gate.waiting, 3)
  hangUps.c?.abort()
  t.match(await refusal(gone), { code: 'RENDER_CANCELLED', statusCode: 499 })
  t.equal(gate.waiting, 2, 'it left the queue')
  runs.push(run('e'))
  t.equal(gate.waiting, 3, 'its place went to the next caller')
  await finishInTurn(tasks, ran, 1)
  await new Promise((resolve) => setImmediate(resolve))
  t.same(ran, ['a', 'b'], 'b waited and runs now')
  hangUps.b?.abort()
  t.equal(gate.waiting, 2, 'a hang-up of a run that waited and runs now takes no one else out of the queue')
  await finishInTurn(tasks, ran, 4)
  t.same(await Promise.all(runs), ['a', 'b', 'd', 'e'], 'the running one was not stopped; the waiting ones all ran')
  t.same(ran, ['a', 'b', 'd', 'e'], 'in arrival order; the one that left never ran')
  hangUps.d?.abort()
  t.equal(gate.waiting, 0, 'a hang-up after its run ended changes nothing')
})

t.test('a caller that hung up before it came is refused without waiting or running', async (t) => {
  const gate = createGate(1, 1)
  const ran: string[] = []
  const gone = new AbortController()
  gone.abort()
  t.match(await refusal(gate.run(task('a', ran).run, { signal: gone.signal })), { code: 'RENDER_CANCELLED' })
  t.same(ran, [])
  const b = task('b', ran)
  const running = gate.run(b.run)
  b.finish()
  t.equal(await running, 'b', 'the worker was not taken')
})
