import assert from 'node:assert/strict'
import type { Database } from 'better-sqlite3'
import fc from 'fast-check'
import qs from 'qs'
import t from 'tap'
import { FORM_TEMPLATE_FIELDS } from '../../db/form-template-content.js'
import { NOTIFICATION_FIELDS } from '../../db/notifications.js'
import { WARD_OCCUPANT_FIELDS } from '../../db/ward-occupants.js'
import { bearer } from '../helper.js'
import {
  buildFuzzApp,
  check,
  oddStringArb,
  PRINCIPALS,
  queryStringArb,
  SQL_FRAGMENTS,
  seedRecords,
  send,
  TOKEN_NAMES,
  type TokenName,
  withKey,
} from './fuzz-helper.js'

// Lists, the unseen count and the audit trail with arbitrary qs-style query strings: never a
// 5xx, errors in the contract's shape, the database untouched, and no query ever widens what a
// token may see (computed here from the tables, not through the service).

interface Resource {
  path: string
  plural: string
  table: string
  fields: string[]
  /** The ids a principal may see, straight from the database. */
  visible: (db: Database, who: (typeof PRINCIPALS)[TokenName]) => Set<string>
}

function byFacility(table: string) {
  return (db: Database, who: { facility: string | null }) =>
    new Set(
      (who.facility === null
        ? db.prepare(`SELECT id FROM ${table}`).pluck().all()
        : db.prepare(`SELECT id FROM ${table} WHERE facility = ?`).pluck().all(who.facility)) as string[],
    )
}

function visibleNotifications(db: Database, who: { account: string; facility: string | null }): Set<string> {
  const rows = db.prepare('SELECT id, facility, recipients FROM notifications').all() as {
    id: string
    facility: string | null
    recipients: string | null
  }[]
  return new Set(
    rows
      .filter((r) => who.facility === null || r.facility === null || r.facility === who.facility)
      .filter((r) => r.recipients === null || (JSON.parse(r.recipients) as string[]).includes(who.account))
      .map((r) => r.id),
  )
}

const RESOURCES: Resource[] = [
  {
    path: '/ward-occupants',
    plural: 'wardOccupants',
    table: 'ward_occupants',
    fields: Object.keys(WARD_OCCUPANT_FIELDS),
    visible: byFacility('ward_occupants'),
  },
  {
    path: '/form-templates',
    plural: 'formTemplates',
    table: 'form_templates',
    fields: Object.keys(FORM_TEMPLATE_FIELDS),
    visible: byFacility('form_templates'),
  },
  {
    path: '/notifications',
    plural: 'notifications',
    table: 'notifications',
    fields: [...Object.keys(NOTIFICATION_FIELDS), 'to'],
    visible: visibleNotifications,
  },
]

const tokenNameArb = fc.constantFrom(...TOKEN_NAMES)

for (const resource of RESOURCES) {
  t.test(`GET ${resource.path} with any query string`, async (t) => {
    const { app, tokens } = await buildFuzzApp(t)
    await seedRecords(app, tokens)
    const ids = () => app.db.prepare(`SELECT id FROM ${resource.table} ORDER BY id`).pluck().all() as string[]
    const statuses = new Map<number, number>()
    await check(
      fc.asyncProperty(tokenNameArb, queryStringArb(resource.fields, ids), async (name, query) => {
        const res = await send(app, { url: `${resource.path}?${query}`, headers: bearer(tokens[name]) })
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
        if (res.statusCode !== 200) return
        const body = res.json() as Record<string, unknown>
        const records = body[resource.plural] as Record<string, unknown>[]
        assert.ok(Array.isArray(records), 'the list envelope')
        assert.ok(Number.isInteger(body.total) && Number.isInteger(body.limit) && Number.isInteger(body.skip))
        assert.ok(records.length <= (body.limit as number), 'no more records than the limit')
        const visible = resource.visible(app.db, PRINCIPALS[name])
        assert.ok((body.total as number) <= visible.size, `total ${body.total} is within what ${name} may see`)
        for (const record of records) {
          assert.ok(visible.has(record.id as string), `${name} may see ${record.id}`)
          if (PRINCIPALS[name].role !== 'admin') assert.ok(!('to' in record), 'addressees only for admins')
        }
      }),
    )
    t.ok(statuses.get(200), 'some queries were answered')
    t.ok(statuses.get(400), 'some queries were refused')
    t.comment(`statuses: ${JSON.stringify(Object.fromEntries(statuses))}`)
  })
}

t.test('GET /notifications/unseen-count with any query string', async (t) => {
  const { app, tokens } = await buildFuzzApp(t)
  await seedRecords(app, tokens)
  const ids = () => app.db.prepare('SELECT id FROM notifications ORDER BY id').pluck().all() as string[]
  const statuses = new Map<number, number>()
  await check(
    fc.asyncProperty(tokenNameArb, queryStringArb(RESOURCES[2]?.fields ?? [], ids), async (name, query) => {
      const res = await send(app, { url: `/notifications/unseen-count?${query}`, headers: bearer(tokens[name]) })
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
      if (res.statusCode !== 200) return
      const { count } = res.json() as { count: number }
      assert.ok(Number.isInteger(count) && count >= 0, 'a count')
      assert.ok(count <= visibleNotifications(app.db, PRINCIPALS[name]).size, 'within what the token may see')
    }),
  )
  t.ok(statuses.get(200), 'some counts were answered')
  t.ok(statuses.get(400), 'some queries were refused')
  t.comment(`statuses: ${JSON.stringify(Object.fromEntries(statuses))}`)
})

t.test('GET /audit with any query string', async (t) => {
  const { app, tokens } = await buildFuzzApp(t)
  await seedRecords(app, tokens)
  const recordIds = app.db.prepare('SELECT DISTINCT record_id FROM audit_log').pluck().all() as string[]
  const value = fc.oneof(
    fc.constantFrom('ward-occupants', 'form-templates', 'notifications', '0', '1', '5', '1000', '1001', '9999'),
    fc.constantFrom('9'.repeat(15), '9'.repeat(16), '-1', '1.5', '', 'null', ...SQL_FRAGMENTS),
    fc.constantFrom(...recordIds),
    oddStringArb,
    fc.constantFrom(65, 101).map((n) => 'r'.repeat(n)),
  )
  const node = fc.oneof(
    { weight: 5, arbitrary: value },
    { weight: 1, arbitrary: fc.array(value, { maxLength: 3 }) },
    { weight: 1, arbitrary: fc.dictionary(fc.constantFrom('$in', '$gt', '0', 'a'), value, { maxKeys: 2 }) },
  )
  const key = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom('resource', 'recordId', 'after', 'limit') },
    { weight: 1, arbitrary: fc.constantFrom('facility', '$limit', 'since', '__proto__', 'constructor') },
    { weight: 1, arbitrary: oddStringArb },
  )
  const queryArb = fc
    .array(fc.tuple(key, node), { maxLength: 5 })
    .map((entries) => qs.stringify(entries.reduce((o, [k, v]) => withKey(o, k, v), {} as Record<string, unknown>)))
  // Admin tokens more often: the others get a 403 whatever the query.
  const auditTokenArb = fc.oneof(tokenNameArb, fc.constantFrom<TokenName>('admin', 'adminA', 'adminB'))
  const statuses = new Map<number, number>()
  await check(
    fc.asyncProperty(auditTokenArb, queryArb, async (name, query) => {
      const res = await send(app, { url: `/audit?${query}`, headers: bearer(tokens[name]) })
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
      const who = PRINCIPALS[name]
      if (who.role !== 'admin') assert.notEqual(res.statusCode, 200, `${name} may not read the audit trail`)
      if (res.statusCode !== 200) return
      const { entries } = res.json() as { entries: { facility: string | null }[] }
      assert.ok(entries.length <= 1000)
      if (who.facility !== null) {
        for (const entry of entries) assert.equal(entry.facility, who.facility, `${name} sees its facility only`)
      }
    }),
  )
  t.ok(statuses.get(200), 'some queries were answered')
  t.ok(statuses.get(400), 'some queries were refused')
  t.comment(`statuses: ${JSON.stringify(Object.fromEntries(statuses))}`)
})
