import t from 'tap'
import { createTurnBatch, type Held } from '../../http/turn-batch.js'

// An immediate queued now runs after the ones the batch queued before it (they run in the order
// queued, and one queued while they run waits for the next turn), so awaiting it is deterministic,
// where a timer of a few milliseconds races the check phase on a loaded machine.
const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

/** A batch whose look, end and requests write what they do into one log. */
function logged(batchSize: number) {
  const log: string[] = []
  let looks = 0
  const hold = createTurnBatch({
    look: () => log.push(`look ${++looks}`),
    end: () => log.push('end'),
    batchSize,
  })
  const request = (name: string, goOn: () => void = () => log.push(name)): Held => ({
    goOn,
    fail: (error) => log.push(`${name} failed: ${error.message}`),
  })
  return { log, hold, request }
}

t.test('the requests of one turn go on after one look taken after the last of them arrived', async (t) => {
  const { log, hold, request } = logged(64)
  hold(request('a'))
  log.push('b arrives')
  hold(request('b'))
  hold(request('c'))
  t.same(log, ['b arrives'], 'nothing goes on while the turn still reads')
  await nextTurn()
  t.same(log, ['b arrives', 'look 1', 'a', 'b', 'c', 'end'], 'one look, then each in the order they came')
})

t.test('a burst goes on a batch a turn, before any request that came after it', async (t) => {
  const { log, hold, request } = logged(2)
  for (const name of ['a', 'b', 'c', 'd', 'e']) hold(request(name))
  await nextTurn()
  t.same(log, ['look 1', 'a', 'b', 'end'], 'the first batch, at once, and its end')
  hold(request('late'))
  await nextTurn()
  await nextTurn()
  t.same(
    log,
    ['look 1', 'a', 'b', 'end', 'look 2', 'c', 'd', 'end', 'look 3', 'e', 'late', 'end'],
    'the rest a batch at a time, each after a look of its own, the late one behind them',
  )
})

t.test('a request that throws is answered with its error; the others go on', async (t) => {
  const { log, hold, request } = logged(64)
  hold(request('a'))
  hold(
    request('b', () => {
      throw new Error('broken')
    }),
  )
  hold(request('c'))
  await nextTurn()
  t.same(log, ['look 1', 'a', 'b failed: broken', 'c', 'end'])
})

t.test('the end comes after the microtasks the batch started, and before the next turn', async (t) => {
  const { log, hold, request } = logged(64)
  const nextTurnRan = new Promise<void>((resolve) => {
    hold(
      request('a', () => {
        // Queued while the batch runs, so it runs in the turn after the batch's, after that turn's
        // timers and reads (a timer here might not yet be due in that turn, and would then come later).
        setImmediate(() => {
          log.push('next turn')
          resolve()
        })
        queueMicrotask(() => log.push('a, after an await'))
      }),
    )
  })
  await nextTurnRan
  t.same(log, ['look 1', 'a, after an await', 'end', 'next turn'])
})
