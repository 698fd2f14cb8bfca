import type { Database } from 'better-sqlite3'
import t from 'tap'
import { openDatabase } from '../../db/connection.js'
import { createNotificationRepository, type Viewer } from '../../db/repositories/notifications.js'
import { planOf, recordStatements } from './captured-statements.js'

/**
 * The inbox's statements, as the repository runs them with the values it binds (recorded while it
 * is built and used), never scan a table that grows with the hospital: each is a search of an index
 * or a primary key.
 */

const SCAN = /^SCAN (r|n|s|notifications|notification_recipients|notification_seen|notification_\w+_counts)\b/

function fill(db: Database) {
  const repo = createNotificationRepository(db)
  const facilities = ['A', 'B', 'C', null]
  db.transaction(() => {
    for (let i = 0; i < 3000; i++) {
      const to = i % 3 === 0 ? undefined : [`account-${i % 200}`, 'nurse-a']
      repo.create({ code: 'c', type: 'ward', title: 't', body: 'b', facility: facilities[i % 4] ?? null, to })
    }
  })()
  db.exec(`INSERT INTO notification_seen (notification_id, account, seen_at, facility)
           SELECT id, 'nurse-a', 0, 'A' FROM notifications WHERE rowid % 2 = 0
           UNION ALL SELECT id, 'admin-1', 0, NULL FROM notifications WHERE rowid % 5 = 0`)
}

const QUERIES: Record<string, unknown>[] = [
  {},
  { $unseen: 'true' },
  { $unseen: 'false' },
  { $sort: { createdAt: '-1' }, $limit: '50' },
  { $sort: { createdAt: '-1' }, $limit: '50', $unseen: 'true' },
  { $sort: { createdAt: '-1' }, $limit: '50', $skip: '50', $unseen: 'true' },
  // Pages larger than some audiences' matches: those audiences are capped by their counters.
  { $limit: '1000', $unseen: 'true' },
  { $sort: { createdAt: '-1' }, $limit: '1000', $unseen: 'false' },
]

for (const analyzed of [false, true]) {
  t.test(`inbox pages, counts and marks search indexes${analyzed ? ' (after ANALYZE)' : ''}`, async (t) => {
    const db = openDatabase(':memory:')
    t.teardown(() => db.close())
    fill(db)
    if (analyzed) db.exec('ANALYZE')
    const recorder = recordStatements(db)
    t.teardown(recorder.stop)
    const repo = createNotificationRepository(db)
    const viewers: Viewer[] = [
      { account: 'nurse-a', facility: 'A', role: 'write' },
      { account: 'nurse-a', facility: null, role: 'read' },
      { account: 'admin-1', facility: null, role: 'admin' },
    ]
    for (const viewer of viewers) {
      for (const query of QUERIES) {
        t.ok(repo.list(viewer, query).total > 0, `${viewer.account}: a page`)
        t.ok(repo.listJson(viewer, query), `${viewer.account}: a page as JSON text`)
      }
      t.ok(repo.unseenCount(viewer, {}) >= 0)
    }
    const [first] = repo.list(viewers[0] as Viewer, { $unseen: 'true', $limit: '1' }).records
    await repo.markSeen(viewers[0] as Viewer, first?.id as string)
    const runs = recorder.ran.filter(({ sql }) => /notification_\w+_counts|INDEXED BY|notification_seen \(/.test(sql))
    const inbox = [...new Set(runs.map(({ sql }) => sql))]
    t.ok(inbox.length >= 6, 'the counters, the pages and the mark were recorded')
    const capped = /SELECT \* FROM \(SELECT r\./
    const uncapped = /(FROM \(|UNION ALL )SELECT r\./
    t.ok(
      inbox.some((sql) => capped.test(sql)) && inbox.some((sql) => uncapped.test(sql)),
      'pages with capped and with uncapped audiences were recorded',
    )
    // Each statement with each set of values it ran with (STAT4 makes plans depend on them).
    const distinct = new Map(runs.map((run) => [JSON.stringify(run), run]))
    for (const run of distinct.values()) {
      const details = planOf(db, run)
      if (process.env.SHOW_PLANS) t.comment(`${run.sql}\n${details.join('\n')}`)
      t.same(
        details.filter((d) => SCAN.test(d)),
        [],
        `${run.sql}\n${details.join('\n')}`,
      )
    }
  })
}
