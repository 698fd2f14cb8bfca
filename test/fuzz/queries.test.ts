import assert from 'node:assert/strict'
import fc from 'fast-check'
import qs from 'qs'
import t from 'tap'
import { FORM_TEMPLATE_FIELDS } from '../../db/repositories/form-template-content.js'
import { NOTIFICATION_FIELDS } from '../../db/repositories/notifications.js'
import { WARD_OCCUPANT_FIELDS } from '../../db/repositories/ward-occupants.js'
import { bearer } from '../helper.js'
import {
  buildFuzzApp,
  check,
  NUM_RUNS,
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
import { type Expected, expectedList, parseQuery } from './list-reference.js'
import { validQueryArb } from './valid-queries.js'

// Lists, the unseen count and the audit trail with arbitrary qs-style query strings: never a
// 5xx, errors in the contract's shape, the database untouched, and every answered list equal to
// an independent reference (list-reference.ts: plain SQL rows filtered in memory) in its
// records, their order and its total.

interface Resource {
  path: string
  plural: string
  table: string
  fields: string[]
}

const RESOURCES: Resource[] = [
  {
    path: '/ward-occupants',
    plural: 'wardOccupants',
    table: 'ward_occupants',
    fields: Object.keys(WARD_OCCUPANT_FIELDS),
  },
  {
    path: '/form-templates',
    plural: 'formTemplates',
    table: 'form_templates',
    fields: Object.keys(FORM_TEMPLATE_FIELDS),
  },
  {
    path: '/notifications',
    plural: 'notifications',
    table: 'notifications',
    fields: [...Object.keys(NOTIFICATION_FIELDS), 'to'],
  },
]

const tokenNameArb = fc.constantFrom(...TOKEN_NAMES)

for (const resource of RESOURCES) {
  t.test(`GET ${resource.path} with any query string`, async (t) => {
    const { app, tokens } = await buildFuzzApp(t)
    await seedRecords(app, tokens)
    const ids = () => app.db.prepare(`SELECT id FROM ${resource.table} ORDER BY id`).pluck().all() as string[]
    const statuses = new Map<number, number>()
    let nonEmpty = 0
    await check(
      fc.asyncProperty(
        tokenNameArb,
        // Valid queries weigh more, so most runs compare records rather than a refusal or an empty page.
        fc.oneof(
          { arbitrary: queryStringArb(resource.fields, ids), weight: 1 },
          { arbitrary: validQueryArb(fc, resource.table), weight: 3 },
        ),
        async (name, query) => {
          const res = await send(app, { url: `${resource.path}?${query}`, headers: bearer(tokens[name]) })
          statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
          if (res.statusCode !== 200) return
          const expected = expectedList(app.db, resource.table, PRINCIPALS[name], parseQuery(query))
          assert.notEqual(expected, 'invalid', `${name}: the reference refuses a query the service answered`)
          const body = res.json() as Record<string, unknown>
          const records = body[resource.plural] as Record<string, unknown>[]
          const { ids, ...page } = expected as Expected
          assert.deepEqual(
            { total: body.total, limit: body.limit, skip: body.skip },
            { total: page.total, limit: page.limit, skip: page.skip },
            `${name}: total, limit and skip as the reference`,
          )
          assert.deepEqual(
            records.map((r) => r.id),
            ids,
            `${name}: the same records, in the same order`,
          )
          assert.deepEqual(records, page.records, `${name}: each record as stored`)
          if (ids.length > 0) nonEmpty++
        },
      ),
      undefined,
      // Each token lists the records it sees, whole and as a sorted page, in every run: drawn queries
      // gave 23 to 44 answers with records in 200 runs, and /form-templates' 23 to 25 fell to the
      // floor of 13 by chance about one run in 150. Every token sees some of each resource's seed.
      TOKEN_NAMES.flatMap((name): [TokenName, string][] => [
        [name, ''],
        [name, '$sort[id]=-1&$limit=3'],
      ]),
    )
    // At least 18 from the lists above; at FUZZ_RUNS=1000 the drawn ones reach it (100 to 200).
    t.ok(nonEmpty > NUM_RUNS / 16, `${nonEmpty} answers with records were compared`)
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
      const parsed = { ...parseQuery(query), $unseen: 'true', $limit: '0', $skip: '0' }
      const expected = expectedList(app.db, 'notifications', PRINCIPALS[name], parsed)
      assert.notEqual(expected, 'invalid', `${name}: the reference refuses a query the service answered`)
      assert.equal(count, (expected as Expected).total, `${name}: the unseen count as the reference`)
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
    oddStringArb(),
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
    { weight: 1, arbitrary: oddStringArb() },
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
