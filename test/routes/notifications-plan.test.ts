import t, { type Test } from 'tap'
import { createNotificationRepository } from '../../db/repositories/notifications.js'
import { planOf, type RanStatement, statementsRunDuring } from '../db/captured-statements.js'
import { bearer, buildTestApp, type TestApp, type TestTokens } from '../helper.js'

/**
 * Fills the table the way that hurt the origin platform: most notifications are addressed to
 * other accounts, a few to nurse-a, a few to everyone, over ten facilities.
 */
function fill(app: TestApp, count: number) {
  const repo = createNotificationRepository(app.db)
  const facilities = ['A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', null]
  app.db.transaction(() => {
    for (let i = 0; i < count; i++) {
      const to = i % 20 === 0 ? undefined : i % 20 === 1 ? ['nurse-a', 'nurse-all'] : [`account-${i % 500}`]
      const facility = facilities[i % facilities.length] ?? null
      repo.create({ code: `code-${i % 7}`, type: 'ward', title: 't', body: 'b', facility, to })
    }
  })()
  const seen = app.db.prepare('INSERT INTO notification_seen (notification_id, account, seen_at) VALUES (?, ?, 0)')
  const ids = app.db.prepare('SELECT id FROM notifications LIMIT 1000').all() as { id: string }[]
  for (const [i, { id }] of ids.entries()) seen.run(id, i % 2 ? 'nurse-a' : `account-${i % 500}`)
}

const QUERIES = [
  '',
  '$unseen=true',
  '$unseen=false',
  'seenBy[$ne]=nurse-a',
  // the readers a facility-bound caller may learn of are looked up by account
  'seenBy=nurse-a',
  'seenBy[$in][]=nurse-a&seenBy[$in][]=account-7',
  '$or[0][seenBy]=nurse-a&$or[1][code]=code-1',
  'code=code-1&type=ward',
  'createdAt[$gte]=0&createdAt[$lt]=99999999999999',
  '$sort[createdAt]=-1&$limit=20',
  'direction=inbound',
]

async function plansOf(t: Test, token: keyof TestTokens, analyzed: boolean) {
  const { app, tokens } = await buildTestApp(t)
  fill(app, 4000)
  if (analyzed) app.db.exec('ANALYZE')
  const statements: RanStatement[] = []
  for (const query of QUERIES) {
    for (const url of [`/notifications?${query}`, `/notifications/unseen-count?${query}`]) {
      const ran = await statementsRunDuring(app.db, async () => {
        const res = await app.inject({ url, headers: bearer(tokens[token]) })
        t.equal(res.statusCode, 200, url)
      })
      // Every statement the list ran, with the values the request bound (accounts, facilities, codes).
      const general = ran.filter(({ sql }) => /FROM notifications r/.test(sql))
      // Unfiltered pages and counts in time order are the inbox's (its own plan test:
      // test/db/notification-inbox-plan.test.ts); every other request goes through the general lister.
      if (!INBOX_ANSWERS.has(url)) t.ok(general.length > 0, `${url}: its list statements were captured`)
      statements.push(...general)
    }
  }
  return statements.map((statement) => ({ sql: statement.sql, details: planOf(app.db, statement) }))
}

const INBOX_ANSWERS = new Set([
  '/notifications?',
  '/notifications/unseen-count?',
  '/notifications?$unseen=true',
  '/notifications/unseen-count?$unseen=true',
  '/notifications?$unseen=false',
  '/notifications/unseen-count?$unseen=false',
  '/notifications?$sort[createdAt]=-1&$limit=20',
  '/notifications/unseen-count?$sort[createdAt]=-1&$limit=20',
])

const SCAN = /^SCAN (r|notifications|notification_recipients|notification_seen)\b/

t.test("listing one account's notifications searches indexes, never scans the table", async (t) => {
  for (const analyzed of [false, true]) {
    for (const token of ['writeA', 'write', 'adminA'] as const) {
      t.test(`${token}${analyzed ? ', after ANALYZE' : ''}`, async (t) => {
        for (const { sql, details } of await plansOf(t, token, analyzed)) {
          if (process.env.SHOW_PLANS) t.comment(`${sql}\n${details.join('\n')}`)
          t.same(
            details.filter((d) => SCAN.test(d)),
            [],
            `${sql}\n${details.join('\n')}`,
          )
        }
      })
    }
  }
})
