import t from 'tap'
import { openDatabase } from '../../db/connection.js'
import { createFeedLog, type FeedLog } from '../../db/repositories/feed.js'
import { FeedHub } from '../../feed/hub.js'

const turn = () => new Promise((resolve) => setImmediate(resolve))

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
    t.same(order, ['the answer leaves', 'the hub reads the log'])
  },
)
