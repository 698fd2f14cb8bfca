import { isDeepStrictEqual } from 'node:util'
import fc from 'fast-check'
import t from 'tap'
import { openDatabase } from '../../db/connection.js'
import { createNotificationRepository, type Viewer } from '../../db/repositories/notifications.js'
import type { Role } from '../../domain/principal.js'
import { propertyRuns } from '../property-runs.js'

/**
 * The inbox (migration 11: counters and index ranges) against an in-memory model of the rule in
 * docs/notifications.md, over random facilities, accounts, addressing, marks and callers: the same
 * records, in the same order, with the same seenBy, total and unseen count.
 */

const FACILITIES = ['A', 'B', 'C']
const ACCOUNTS = ['a1', 'a2', 'a3', 'a4']

interface Made {
  title: string
  meta?: Record<string, unknown>
  direction?: 'inbound' | 'outbound'
  facility: string | null
  unboundOnly: boolean
  to: string[]
  createdAt: number
}

interface ModelNotification extends Made {
  id: string
  /** Marks through the service, in order: shown in seenBy. */
  readers: { account: string; facility: string | null }[]
  /** Every account that marked it (also marks written straight into the table). */
  marked: Set<string>
}

const viewerArb = fc.record({
  account: fc.constantFrom(...ACCOUNTS),
  facility: fc.constantFrom(null, ...FACILITIES),
  role: fc.constantFrom<Role>('read', 'write', 'admin'),
})

// Any text (quotes, backslashes, control characters, astral planes), nested meta
const contentArb = fc.record(
  {
    title: fc.string({ unit: 'binary', maxLength: 12 }),
    meta: fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
    direction: fc.constantFrom<'inbound' | 'outbound'>('inbound', 'outbound'),
  },
  { requiredKeys: ['title'] },
)

const audienceArb = fc.oneof(
  fc.record({
    facility: fc.constantFrom(null, ...FACILITIES),
    unboundOnly: fc.constant(false),
    to: fc.oneof(
      fc.constant<string[]>([]),
      fc.uniqueArray(fc.constantFrom(...ACCOUNTS), { minLength: 1, maxLength: 3 }),
    ),
    createdAt: fc.integer({ min: 0, max: 6 }), // few values: many ties, ordered by id
  }),
  fc.record({
    facility: fc.constant(null),
    unboundOnly: fc.constant(true),
    to: fc.oneof(
      fc.constant<string[]>([]),
      fc.uniqueArray(fc.constantFrom(...ACCOUNTS), { minLength: 1, maxLength: 2 }),
    ),
    createdAt: fc.integer({ min: 0, max: 6 }),
  }),
)

const madeArb: fc.Arbitrary<Made> = fc.tuple(contentArb, audienceArb).map(([content, audience]) => ({
  ...audience,
  ...(content as Omit<Made, 'facility' | 'unboundOnly' | 'to' | 'createdAt'>),
}))

/** The schema's field order: what Fastify's serializer writes. */
const FIELD_ORDER = [
  'id',
  'createdAt',
  'code',
  'type',
  'title',
  'body',
  'meta',
  'seenBy',
  'direction',
  'facility',
  'to',
]
function inSchemaOrder(record: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const name of FIELD_ORDER) if (record[name] !== undefined) out[name] = record[name]
  return out
}

const markArb = fc.record({
  viewer: viewerArb,
  at: fc.nat(),
  /** Written straight into notification_seen (as older versions or other tools may have). */
  direct: fc.boolean(),
})

const queryArb = fc.record({
  unseen: fc.constantFrom(undefined, 'true', 'false'),
  newestFirst: fc.boolean(),
  limit: fc.integer({ min: 0, max: 8 }),
  skip: fc.integer({ min: 0, max: 12 }),
})

function mayRead(viewer: Viewer, n: ModelNotification): boolean {
  const facilityOk =
    viewer.facility === null || n.facility === viewer.facility || (n.facility === null && !n.unboundOnly)
  return facilityOk && (n.to.length === 0 || n.to.includes(viewer.account))
}

function seenByFor(viewer: Viewer, n: ModelNotification): string[] {
  return n.readers
    .filter((r) => viewer.facility === null || r.facility === viewer.facility || r.account === viewer.account)
    .map((r) => r.account)
}

function byTime(newestFirst: boolean) {
  return (x: ModelNotification, y: ModelNotification) =>
    (newestFirst ? y.createdAt - x.createdAt : x.createdAt - y.createdAt) || (x.id < y.id ? -1 : 1)
}

t.test('the inbox answers what the rule says, over random data', async (t) => {
  const numRuns = propertyRuns(150)
  let checked = 0
  await fc.assert(
    fc.asyncProperty(
      fc.array(madeArb, { maxLength: 30 }),
      fc.array(markArb, { maxLength: 40 }),
      fc.array(fc.tuple(viewerArb, queryArb), { minLength: 1, maxLength: 6 }),
      async (made, marks, reads) => {
        const db = openDatabase(':memory:')
        try {
          const repo = createNotificationRepository(db)
          const model: ModelNotification[] = made.map((m, i) => {
            const record = repo.create({
              code: 'c',
              type: 'ward',
              title: m.title,
              body: `n${i}`,
              ...(m.meta ? { meta: m.meta } : {}),
              ...(m.direction ? { direction: m.direction } : {}),
              facility: m.facility,
              unboundOnly: m.unboundOnly,
              to: m.to,
              createdAt: m.createdAt,
            })
            return { ...m, id: record.id, readers: [], marked: new Set<string>() }
          })
          const direct = db.prepare(
            'INSERT OR IGNORE INTO notification_seen (notification_id, account, seen_at, facility) VALUES (?, ?, 0, ?)',
          )
          for (const mark of marks) {
            const n = model.length > 0 ? model[mark.at % model.length] : undefined
            if (!n) break
            if (mark.direct) {
              direct.run(n.id, mark.viewer.account, mark.viewer.facility)
              n.marked.add(mark.viewer.account)
              continue
            }
            const outcome = await repo.markSeen(mark.viewer, n.id).then(
              () => 'marked',
              () => 'refused',
            )
            if (outcome !== (mayRead(mark.viewer, n) ? 'marked' : 'refused')) return false
            if (outcome === 'marked' && !n.marked.has(mark.viewer.account)) {
              // a mark made straight into the table is not in seen_by, so it is never shown
              n.readers.push({ account: mark.viewer.account, facility: mark.viewer.facility })
            }
            if (outcome === 'marked') n.marked.add(mark.viewer.account)
          }
          for (const [viewer, q] of reads) {
            const visible = model.filter((n) => mayRead(viewer, n))
            const wanted = visible
              .filter((n) => q.unseen === undefined || n.marked.has(viewer.account) === (q.unseen === 'false'))
              .sort(byTime(q.newestFirst))
            const query: Record<string, unknown> = { $limit: String(q.limit), $skip: String(q.skip) }
            if (q.unseen) query.$unseen = q.unseen
            if (q.newestFirst) query.$sort = { createdAt: '-1' }
            const page = repo.list(viewer, query)
            const expected = wanted
              .slice(q.skip, q.skip + q.limit)
              .map((n) => ({ id: n.id, seenBy: seenByFor(viewer, n) }))
            const got = page.records.map((r) => ({ id: r.id, seenBy: r.seenBy }))
            const unseen = visible.filter((n) => !n.marked.has(viewer.account)).length
            if (!isDeepStrictEqual(got, expected) || page.total !== wanted.length) return false
            // The same page as JSON text written by SQLite: byte for byte what the serializer writes.
            const text = repo.listJson(viewer, query)
            if (!text || text.total !== page.total) return false
            if (text.json !== JSON.stringify(page.records.map(inSchemaOrder))) return false
            if (repo.unseenCount(viewer, {}) !== unseen) return false
            checked++
          }
          return true
        } finally {
          db.close()
        }
      },
    ),
    { numRuns },
  )
  t.ok(checked > numRuns, `${checked} pages and counts equal the model's`)
})
