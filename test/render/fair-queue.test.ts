import t from 'tap'
import { createFairQueue } from '../../render/fair-queue.js'

/** Runs the queue like the compiler does: one job at a time, `finished` after each. */
function serve(queue: ReturnType<typeof createFairQueue<string>>, onServed: (job: string) => void, max: number) {
  const served: string[] = []
  for (let i = 0; i < max; i++) {
    const job = queue.shift()
    if (job === undefined) break
    served.push(job)
    queue.finished()
    onServed(job)
  }
  return served
}

t.test('owners that send their next job as soon as one ends cannot starve a waiting owner', async (t) => {
  const queue = createFairQueue<string>()
  let n = 0
  queue.push('B', `B${++n}`)
  queue.push('C', `C${++n}`)
  queue.push('A', 'A1')
  queue.push('A', 'A2')
  // B and C each have one job waiting at a time, and send the next the moment theirs is done.
  const served = serve(queue, (job) => job[0] !== 'A' && queue.push(job[0] as string, `${job[0]}${++n}`), 12)
  t.ok(served.includes('A2'), `A2 is served: ${served.join(' ')}`)
  const gaps = ['A1', 'A2'].map((a) => served.indexOf(a))
  t.ok((gaps[1] as number) - (gaps[0] as number) <= 3, 'after at most one job of each other owner')
  t.equal(served.filter((j) => j.startsWith('A')).length, 2)
})

t.test('a new owner goes next; one owner keeps its order; an idle owner is forgotten in time', async (t) => {
  const queue = createFairQueue<string>()
  for (const job of ['a1', 'a2', 'a3']) queue.push('A', job)
  t.equal(queue.shift(), 'a1')
  queue.finished()
  queue.push('D', 'd1')
  t.same(
    serve(queue, () => {}, 10),
    ['d1', 'a2', 'a3'],
  )
  t.equal(queue.size, 0)
  queue.push('E', 'e1')
  queue.push('A', 'a4')
  t.same(
    serve(queue, () => {}, 10),
    ['e1', 'a4'],
    'A, idle for a round, joins at the round in progress',
  )
  t.same(queue.splice(), [])
})
