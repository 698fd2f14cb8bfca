import type { Database } from 'better-sqlite3'
import t from 'tap'
import { openDatabase } from '../../db/connection.js'
import { createNotificationRepository, type Viewer } from '../../db/notifications.js'

/**
 * The inbox's statements, as the repository prepares them (recorded while it is built and used),
 * never scan a table that grows with the hospital: each is a search of an index or a primary key.
 */

const SCAN = /^SCAN (r|n|s|notifications|notification_recipients|notification_seen|notification_\w+_counts)\b/

function recordPrepared(db: Database): string[] {
  const texts: string[] = []
  const prepare = db.prepare.bind(db)
  db.prepare = ((sql: string) => {
    texts.push(sql)
    return prepare(sql)
  }) as typeof db.prepare
  return texts
}

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

function planOf(db: Database, sql: string): string[] {
  const params: unknown[] = Array.from(sql.matchAll(/\?/g), () => 'x')
  const named = [...new Set(Array.from(sql.matchAll(/[@:](\w+)/g), (m) => m[1] as string))]
  if (named.length > 0) params.push(Object.fromEntries(named.map((name) => [name, 'x'])))
  const statement = db.prepare(`EXPLAIN QUERY PLAN ${sql}`)
  const rows = statement.all(...params)
  return (rows as { detail: string }[]).map((row) => row.detail)
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
    const texts = recordPrepared(db)
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
    const inbox = texts.filter((sql) => /notification_\w+_counts|INDEXED BY|notification_seen \(/.test(sql))
    t.ok(inbox.length >= 6, 'the counters, the pages and the mark were recorded')
    const capped = /SELECT \* FROM \(SELECT r\./
    const uncapped = /(FROM \(|UNION ALL )SELECT r\./
    t.ok(
      inbox.some((sql) => capped.test(sql)) && inbox.some((sql) => uncapped.test(sql)),
      'pages with capped and with uncapped audiences were recorded',
    )
    for (const sql of inbox) {
      const details = planOf(db, sql)
      if (process.env.SHOW_PLANS) t.comment(`${sql}\n${details.join('\n')}`)
      t.same(
        details.filter((d) => SCAN.test(d)),
        [],
        `${sql}\n${details.join('\n')}`,
      )
    }
  })
}
