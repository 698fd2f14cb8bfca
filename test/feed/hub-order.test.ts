import t from 'tap'
import { openDatabase } from '../../db/connection.js'
import { createFeedLog, type FeedLog } from '../../db/repositories/feed.js'
import { FeedHub } from '../../feed/hub.js'
import type { FeedStream } from '../../feed/stream.js'

const turn = () => new Promise((resolve) => setImmediate(resolve))

/** A live stream that only records what it is told. */
function listener(told: string[]): FeedStream {
  return {
    viewer: { tokenId: 't1', account: 'a', role: 'admin', facility: null },
    live: false,
    pos: 0,
    congested: false,
    ended: false,
    onEnd: () => {},
    announce: (name: string, seq: number) => told.push(`${name} ${seq}`),
    deliver: (delivery: { seq: number }) => told.push(`event ${delivery.seq}`),
    end: () => {},
  } as unknown as FeedStream
}

t.test(
  'the hub reads what a sync made durable on the turn after it: the answers waiting for it leave first',
  async (t) => {
    const db = openDatabase(':memory:')
    t.teardown(() => db.close())
    const log = createFeedLog(db)
    const order: string[] = []
    const reading: FeedLog = {
      ...log,
      between: (...args: Parameters<FeedLog['between']>) => {
        order.push('the hub reads the log')
        return log.between(...args)
      },
    }
    let synced: () => void = () => {}
    const durable = new Promise<void>((resolve) => {
      synced = resolve
    })
    const hub = new FeedHub(reading, { maxStreams: 10, maxStreamsPerToken: 10 }, undefined, () => durable)
    // Someone listens (with nobody, the hub reads nothing: see below).
    hub.open(listener([]), null)
    log.append({ resource: 'ward-occupants', action: 'created', recordId: 'r1', facility: 'w1', payload: '{}' })
    hub.pump()
    // An answer waiting for the same sync: the write queue settles its write, the answerer builds
    // the reply and sends it, a few promise steps after the sync returned (as an ADT ACK does).
    void durable.then(async () => {
      for (let step = 0; step < 5; step++) await null
      order.push('the answer leaves')
    })
    synced()
    await turn()
    await turn()
    // The open's read and the append's read both come after the answer.
    t.same([...new Set(order)], ['the answer leaves', 'the hub reads the log'])
  },
)

t.test('with no stream open the hub reads no event, and a stream opened later starts after them', async (t) => {
  const db = openDatabase(':memory:')
  t.teardown(() => db.close())
  const log = createFeedLog(db)
  let reads = 0
  const reading: FeedLog = {
    ...log,
    between: (...args: Parameters<FeedLog['between']>) => {
      reads++
      return log.between(...args)
    },
  }
  let synced: () => void = () => {}
  let durable: Promise<void> | undefined = new Promise<void>((resolve) => {
    synced = resolve
  })
  const hub = new FeedHub(reading, { maxStreams: 10, maxStreamsPerToken: 10 }, undefined, () => durable)
  for (const id of ['r1', 'r2'])
    log.append({ resource: 'ward-occupants', action: 'created', recordId: id, facility: 'w1', payload: '{}' })
  hub.pump()
  // Not on disk yet: a stream opened now must not be placed after them.
  const early: string[] = []
  hub.open(listener(early), null)
  t.same(early, ['ready 0'], 'placed before what is not durable')
  hub.stop()
  const later = new FeedHub(reading, { maxStreams: 10, maxStreamsPerToken: 10 }, undefined, () => durable)
  log.append({ resource: 'ward-occupants', action: 'created', recordId: 'r3', facility: 'w1', payload: '{}' })
  later.pump()
  synced()
  await turn()
  await turn()
  durable = undefined
  t.equal(reads, 0, 'nobody listened: nothing read')
  const told: string[] = []
  later.open(listener(told), null)
  t.same(told, ['ready 3'], 'a stream opened after them starts after the last durable event')
  log.append({ resource: 'ward-occupants', action: 'created', recordId: 'r4', facility: 'w1', payload: '{}' })
  later.pump()
  t.same(told, ['ready 3', 'event 4'], 'and is told of the next')
})
