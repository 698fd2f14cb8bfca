import type { Statement } from 'better-sqlite3'
import t, { type Test } from 'tap'
import { createNotificationRepository } from '../../db/notifications.js'
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

/** Records the SQL text of every statement prepared while `run` goes on: what the repository really runs. */
async function preparedDuring(app: TestApp, run: () => Promise<void>): Promise<string[]> {
  const texts: string[] = []
  const prepare = app.db.prepare.bind(app.db)
  app.db.prepare = ((sql: string) => {
    texts.push(sql)
    return prepare(sql)
  }) as unknown as typeof app.db.prepare
  try {
    await run()
  } finally {
    app.db.prepare = prepare as typeof app.db.prepare
  }
  return texts
}

function plan(app: TestApp, sql: string): string[] {
  const params: unknown[] = Array.from(sql.matchAll(/\?/g), () => 'x')
  const named = [...new Set(Array.from(sql.matchAll(/[@:](\w+)/g), (m) => m[1] as string))]
  if (named.length > 0) params.push(Object.fromEntries(named.map((name) => [name, 'x'])))
  const statement: Statement = app.db.prepare(`EXPLAIN QUERY PLAN ${sql}`)
  return (statement.all(...params) as { detail: string }[]).map((row) => row.detail)
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
  const texts = await preparedDuring(app, async () => {
    for (const query of QUERIES) {
      for (const url of [`/notifications?${query}`, `/notifications/unseen-count?${query}`]) {
        const res = await app.inject({ url, headers: bearer(tokens[token]) })
        t.equal(res.statusCode, 200, url)
      }
    }
  })
  const statements = texts.filter((sql) => /FROM notifications r/.test(sql))
  t.ok(statements.length >= QUERIES.length, 'the list statements were captured')
  return statements.map((sql) => ({ sql, details: plan(app, sql) }))
}

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
