import t from 'tap'
import { openDatabase } from '../../db/connection.js'
import { createFeedLog, type FeedChange, PRUNE_CHUNK } from '../../db/repositories/feed.js'

t.test('the feed is pruned oldest first, at most PRUNE_CHUNK events per call, until nothing is old', async (t) => {
  const db = openDatabase(':memory:', 0)
  t.teardown(() => db.close())
  const log = createFeedLog(db)
  const old = PRUNE_CHUNK * 2 + 17
  const change: FeedChange = {
    resource: 'ward-occupants',
    action: 'created',
    recordId: 'r',
    facility: 'A',
    payload: '{}',
  }
  db.transaction(() => {
    for (let i = 0; i < old; i++) log.append(change, 1_000)
    for (let i = 0; i < 3; i++) log.append(change, 9_000)
  })()
  const count = db.prepare<[], number>('SELECT count(*) FROM feed_events').pluck()
  const deleted: number[] = []
  for (let d = log.prune(5_000); d > 0; d = log.prune(5_000)) deleted.push(d)
  t.same(deleted, [PRUNE_CHUNK, PRUNE_CHUNK, 17], 'three calls, none over the chunk')
  t.equal(count.get(), 3, 'the newer events stay')
  t.equal(log.prunedThrough(), old, 'pruned through the last old event')
  t.equal(log.head(), old + 3)
})
