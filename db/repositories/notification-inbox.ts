/**
 * The inbox: a viewer's notifications without filters, in time order, paged and counted at a cost
 * that depends on the page, not on how many notifications the hospital has kept (migration 11).
 *
 * A viewer's notifications are the union of disjoint audiences, each one range of an index in
 * (created_at, id) order: its facility's broadcasts, every facility's broadcasts, and the ones
 * addressed to its account in each of those two (a viewer without a facility: every broadcast and
 * every one addressed to it). The audiences' ranges are merged in the page's order and walked only
 * until the page is full: `skip + limit` index entries in all (for `$unseen` only the ones the
 * account has or has not marked, checked by primary key as the walk goes). Only then are the page's
 * rows read, by id. Totals come from counters the schema's triggers keep in the same transaction
 * as the rows they count.
 */
import type { Database, Statement } from 'better-sqlite3'
import type { ListQuery } from '../query/query.js'

/** What a viewer sees from: its account and facility (null: every facility). */
interface InboxViewer {
  account: string
  facility: string | null
}

/** Only its own marks, only the others, or every notification. */
export type SeenFilter = 'unseen' | 'seen' | 'all'

interface Branch {
  /** SELECT of `id, created_at` of one audience, in index order, `{order}` and `{seen}` to fill. */
  sql: string
  params(viewer: InboxViewer): unknown[]
}

const SEEN = 'EXISTS (SELECT 1 FROM notification_seen s WHERE s.notification_id = {id} AND s.account = ?)'

const BOUND: Branch[] = [
  {
    sql: `SELECT r.id, r.created_at FROM notifications r INDEXED BY notifications_audience
          WHERE r.broadcast = 1 AND r.unbound_only = 0 AND r.facility = ?`,
    params: (v) => [v.facility],
  },
  {
    sql: `SELECT r.id, r.created_at FROM notifications r INDEXED BY notifications_audience
          WHERE r.broadcast = 1 AND r.unbound_only = 0 AND r.facility IS NULL`,
    params: () => [],
  },
  {
    sql: `SELECT r.notification_id AS id, r.created_at FROM notification_recipients r
          INDEXED BY notification_recipients_inbox WHERE r.account = ? AND r.unbound_only = 0 AND r.facility = ?`,
    params: (v) => [v.account, v.facility],
  },
  {
    sql: `SELECT r.notification_id AS id, r.created_at FROM notification_recipients r
          INDEXED BY notification_recipients_inbox WHERE r.account = ? AND r.unbound_only = 0 AND r.facility IS NULL`,
    params: (v) => [v.account],
  },
]

const UNBOUND: Branch[] = [
  {
    sql: `SELECT r.id, r.created_at FROM notifications r INDEXED BY notifications_broadcast_created
          WHERE r.broadcast = 1`,
    params: () => [],
  },
  {
    sql: `SELECT r.notification_id AS id, r.created_at FROM notification_recipients r
          INDEXED BY notification_recipients_account_created WHERE r.account = ?`,
    params: (v) => [v.account],
  },
]

// The counters of each branch above, in the same order: [total, marked by the account].
const BOUND_COUNTS = `SELECT
  ifnull((SELECT total FROM notification_audience_counts WHERE broadcast = 1 AND account = '' AND scope = json_array(0, :facility)), 0),
  ifnull((SELECT seen FROM notification_seen_counts WHERE account = :account AND broadcast = 1 AND scope = json_array(0, :facility)), 0),
  ifnull((SELECT total FROM notification_audience_counts WHERE broadcast = 1 AND account = '' AND scope = '[0,null]'), 0),
  ifnull((SELECT seen FROM notification_seen_counts WHERE account = :account AND broadcast = 1 AND scope = '[0,null]'), 0),
  ifnull((SELECT total FROM notification_audience_counts WHERE broadcast = 0 AND account = :account AND scope = json_array(0, :facility)), 0),
  ifnull((SELECT seen FROM notification_seen_counts WHERE account = :account AND broadcast = 0 AND scope = json_array(0, :facility)), 0),
  ifnull((SELECT total FROM notification_audience_counts WHERE broadcast = 0 AND account = :account AND scope = '[0,null]'), 0),
  ifnull((SELECT seen FROM notification_seen_counts WHERE account = :account AND broadcast = 0 AND scope = '[0,null]'), 0)`

const UNBOUND_COUNTS = `SELECT
  (SELECT ifnull(sum(total), 0) FROM notification_audience_counts WHERE broadcast = 1 AND account = ''),
  (SELECT ifnull(sum(seen), 0) FROM notification_seen_counts WHERE account = :account AND broadcast = 1),
  (SELECT ifnull(sum(total), 0) FROM notification_audience_counts WHERE broadcast = 0 AND account = :account),
  (SELECT ifnull(sum(seen), 0) FROM notification_seen_counts WHERE account = :account AND broadcast = 0)`

const ORDER = /^r\.created_at (ASC|DESC), r\.id (ASC|DESC)$/

/** A string column as JSON text: json_quote escapes as JSON.stringify does (see jsonRecord in list.ts). */
const str = (column: string) => `json_quote(n.${column})`

/**
 * The JSON text of one record as the response schema writes it (fields in its order, absent optional
 * ones left out), written by SQLite in one concat() (a chain of `||` copies the growing text at
 * each step). seenBy for a facility-bound viewer keeps, in marking order, only the readers it may
 * learn of (docs/notifications.md): each a primary key search.
 */
function recordJson(bound: boolean, admin: boolean): string {
  // No search for a notification nobody has read, or only the viewer (every account in seen_by
  // has its mark in notification_seen, and a viewer may always learn of its own).
  const seenBy = bound
    ? `iif(n.seen_by = '[]' OR n.seen_by = json_array(@viewerAccount), json(n.seen_by),
         (SELECT json_group_array(j.value) FROM json_each(n.seen_by) j
         WHERE EXISTS (SELECT 1 FROM notification_seen s WHERE s.notification_id = n.id AND s.account = j.value
           AND (s.facility = @viewerFacility OR s.account = @viewerAccount))))`
    : 'json(n.seen_by)'
  const optional = (name: string, value: string, column: string) =>
    `iif(n.${column} IS NULL, '', concat(',"${name}":', ${value}))`
  const parts = [
    `'{"id":', ${str('id')}`,
    `',"createdAt":', n.created_at`,
    `',"code":', ${str('code')}`,
    `',"type":', ${str('type')}`,
    `',"title":', ${str('title')}`,
    `',"body":', ${str('body')}`,
    optional('meta', 'json(n.meta)', 'meta'),
    `',"seenBy":', ${seenBy}`,
    optional('direction', str('direction'), 'direction'),
    optional('facility', str('facility'), 'facility'),
    ...(admin ? [optional('to', 'json(n.recipients)', 'recipients')] : []),
    `'}'`,
  ]
  return `concat(${parts.join(', ')})`
}

/** Whether the inbox answers this query: no filter, time order (the default, or newest first). */
export function inboxAnswers(query: ListQuery): boolean {
  return query.filter.sql === '1' && ORDER.test(query.orderBy)
}

export function createInbox(db: Database) {
  // Prepared on first use, like the pages.
  let counts: { bound: Statement; unbound: Statement } | undefined
  const pages = new Map<string, Statement>()

  /** Per branch of the viewer, how many of its notifications match `seen`. */
  function branchCounts(viewer: InboxViewer, seen: SeenFilter): number[] {
    counts ??= { bound: db.prepare(BOUND_COUNTS).raw(), unbound: db.prepare(UNBOUND_COUNTS).raw() }
    const row =
      viewer.facility === null
        ? (counts.unbound.get({ account: viewer.account }) as number[])
        : (counts.bound.get({ account: viewer.account, facility: viewer.facility }) as number[])
    const out: number[] = []
    for (let i = 0; i < row.length; i += 2) {
      const total = row[i] as number
      const marked = row[i + 1] as number
      out.push(seen === 'all' ? total : seen === 'seen' ? marked : total - marked)
    }
    return out
  }

  /**
   * `capped`: per branch, whether it is walked with a LIMIT of its own (it holds fewer matches
   * than the page needs, see pageOf). `json`: the records' JSON text (recordJson) instead of rows.
   */
  function pageStatement(
    bound: boolean,
    seen: SeenFilter,
    orderBy: string,
    capped: boolean[],
    json: { admin: boolean } | null,
  ): Statement {
    const key = `${bound}\n${seen}\n${orderBy}\n${capped.join()}\n${json ? json.admin : 'rows'}`
    let statement = pages.get(key)
    if (!statement) {
      const [, time, id] = ORDER.exec(orderBy) as RegExpExecArray
      const arms = (bound ? BOUND : UNBOUND).map((branch, i) => {
        const idColumn = branch.sql.includes('notification_id AS id') ? 'r.notification_id' : 'r.id'
        const check = SEEN.replace('{id}', idColumn)
        const walk = seen === 'all' ? branch.sql : `${branch.sql} AND ${seen === 'unseen' ? 'NOT ' : ''}${check}`
        // SQLite sorts a subquery with a LIMIT again before merging it (a temporary b-tree), so
        // only a branch that would otherwise walk past its last match to the end of its range
        // gets one.
        return capped[i] ? `SELECT * FROM (${walk} ORDER BY r.created_at ${time}, ${idColumn} ${id} LIMIT ?)` : walk
      })
      // A compound ORDER BY merges the branches, each read in its index's order, and stops at the
      // page's end: skip + limit index entries in all. The page's ids are cut before any row is
      // read, then the CROSS JOIN reads each of them by primary key.
      const columns = json ? recordJson(bound, json.admin) : 'n.*'
      statement = db.prepare(
        `SELECT ${columns} FROM (${arms.join(' UNION ALL ')} ORDER BY 2 ${time}, 1 ${id} LIMIT ? OFFSET ?) p
         CROSS JOIN notifications n ON n.id = p.id ORDER BY p.created_at ${time}, p.id ${id}`,
      )
      if (json) statement.pluck()
      pages.set(key, statement)
    }
    return statement
  }

  return {
    /** How many notifications the viewer sees (`all`), has marked (`seen`) or not (`unseen`). */
    count(viewer: InboxViewer, seen: SeenFilter): number {
      return branchCounts(viewer, seen).reduce((a, b) => a + b, 0)
    },

    /**
     * One page in the query's order and its exact total. Each branch walks at most as far as it
     * holds matching notifications (its counter), so a branch with nothing unseen is not walked.
     */
    page<Row>(viewer: InboxViewer, seen: SeenFilter, query: ListQuery): { total: number; rows: () => Row[] } {
      const { total, run } = pageOf(viewer, seen, query)
      return { total, rows: () => run(null) as Row[] }
    },

    /** The same page as the text of a JSON array of records as `viewer` may see them. */
    jsonPage(
      viewer: InboxViewer & { role: string },
      seen: SeenFilter,
      query: ListQuery,
    ): { total: number; json: string } {
      const { total, run } = pageOf(viewer, seen, query)
      if (query.limit === 0 || query.skip >= total) return { total, json: '[]' }
      const records = run({ admin: viewer.role === 'admin' }) as string[]
      return { total, json: `[${records.join(',')}]` }
    },
  }

  function pageOf(viewer: InboxViewer, seen: SeenFilter, query: ListQuery) {
    const perBranch = branchCounts(viewer, seen)
    const total = perBranch.reduce((a, b) => a + b, 0)
    const bound = viewer.facility !== null
    function run(json: { admin: boolean } | null): unknown[] {
      const first = query.skip + query.limit
      // Every notification of a branch matches `all`, so its range ends with its matches. With
      // `seen` or `unseen`, a branch holding no more matches than the page needs would be walked
      // on past its last one; its counter caps it instead.
      const capped = perBranch.map((count) => seen !== 'all' && count <= first)
      const params: unknown[] = []
      ;(bound ? BOUND : UNBOUND).forEach((branch, i) => {
        params.push(...branch.params(viewer))
        if (seen !== 'all') params.push(viewer.account)
        if (capped[i]) params.push(perBranch[i])
      })
      params.push(query.limit, query.skip)
      const statement = pageStatement(bound, seen, query.orderBy, capped, json)
      if (json && bound) params.push({ viewerFacility: viewer.facility, viewerAccount: viewer.account })
      return statement.all(...params)
    }
    return { total, run }
  }
}
