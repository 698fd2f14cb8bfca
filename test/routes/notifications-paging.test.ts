import t from 'tap'
import { createNotificationRepository } from '../../db/repositories/notifications.js'
import { buildTestApp, type TestApp, type TestTokens } from '../helper.js'
import { client } from './notifications-fixtures.js'

/**
 * A viewer's notifications come from disjoint branches (its facility's broadcasts, every facility's,
 * its own), each paged on its own before the page is cut from their union (db/list.ts). Paging one
 * record at a time, or a few, in any order and with any filter must give exactly the one full list.
 */
function fill(app: TestApp) {
  const repo = createNotificationRepository(app.db)
  const kinds = [
    { facility: 'A' },
    { facility: null },
    { facility: 'A', to: ['nurse-a'] },
    { facility: null, to: ['nurse-a', 'nurse-all'] },
    { facility: 'B' },
    { facility: 'B', to: ['nurse-a'] },
    { facility: 'A', to: ['viewer-a'] },
    // of records without a facility: for unbound callers only
    { facility: null, unboundOnly: true },
    { facility: null, to: ['nurse-a', 'nurse-all'], unboundOnly: true },
  ]
  for (let i = 0; i < 90; i++) {
    const kind = kinds[i % kinds.length] as (typeof kinds)[number]
    repo.create({
      code: i % 3 ? 'bed-occupied' : 'patient-discharged',
      type: i % 4 ? 'ward' : 'system',
      // titles repeat and createdAt ties, so the order's tie-breaking is exercised too
      title: `t${i % 5}`,
      body: 'b',
      createdAt: 1000 + Math.floor(i / 3) * 10,
      ...kind,
    })
  }
}

const ORDERS = ['', '$sort[createdAt]=-1', '$sort[title]=1&$sort[createdAt]=-1', '$sort[code]=-1']
const FILTERS = ['', 'type=ward', '$unseen=true', 'createdAt[$gte]=1100&createdAt[$lt]=1200']

async function ids(app: TestApp, token: string, query: string): Promise<{ total: number; ids: string[] }> {
  const res = await client(app, token).list(query)
  if (res.statusCode !== 200) throw new Error(`${query}: ${res.statusCode} ${res.body}`)
  const body = res.json()
  return { total: body.total, ids: body.notifications.map((n: { id: string }) => n.id) }
}

t.test('paging through the branches gives exactly the full list, for every order and filter', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  fill(app)
  // mark a few seen so $unseen differs from everything
  const nurse = client(app, tokens.writeA)
  const first = (await ids(app, tokens.writeA, '$limit=5')).ids
  for (const id of first.slice(0, 3)) await nurse.seen(id)

  for (const who of ['writeA', 'write', 'admin', 'readA'] as (keyof TestTokens)[]) {
    const token = tokens[who]
    for (const order of ORDERS) {
      for (const filter of FILTERS) {
        const query = [order, filter].filter(Boolean).join('&')
        const full = await ids(app, token, `${query}&$limit=200`)
        t.equal(new Set(full.ids).size, full.ids.length, `${who} ${query}: no record twice`)
        t.equal(full.total, full.ids.length, `${who} ${query}: total counts each record once`)
        for (const size of [1, 3, 7]) {
          const paged: string[] = []
          for (let skip = 0; skip < full.total + size; skip += size) {
            const page = await ids(app, token, `${query}&$limit=${size}&$skip=${skip}`)
            t.equal(page.total, full.total)
            paged.push(...page.ids)
          }
          t.same(paged, full.ids, `${who} ${query}: pages of ${size}`)
        }
      }
    }
  }
})

t.test('the branches never add what the caller may not see', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  fill(app)
  const { ids: seenByA } = await ids(app, tokens.writeA, '$limit=200')
  const rows = app.db
    .prepare(
      `SELECT id FROM notifications n WHERE (facility = 'A' OR facility IS NULL) AND unbound_only = 0
         AND (broadcast = 1 OR id IN (SELECT notification_id FROM notification_recipients WHERE account = 'nurse-a'))
       ORDER BY created_at, id`,
    )
    .pluck()
    .all()
  t.same(seenByA, rows, "nurse-a's list is exactly what the rule allows, in order")
  const { ids: seenByAll } = await ids(app, tokens.write, '$limit=200')
  const unbound = app.db
    .prepare(
      `SELECT id FROM notifications n
       WHERE broadcast = 1 OR id IN (SELECT notification_id FROM notification_recipients WHERE account = 'nurse-all')
       ORDER BY created_at, id`,
    )
    .pluck()
    .all()
  t.same(seenByAll, unbound, "nurse-all's list (no facility) holds the unbound-only ones too")
  t.ok(
    app.db.prepare('SELECT count(*) FROM notifications WHERE unbound_only = 1').pluck().get(),
    'some are unbound-only',
  )
})
