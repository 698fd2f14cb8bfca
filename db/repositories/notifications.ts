import type { Database } from 'better-sqlite3'
import { NotFoundError } from '../../domain/errors.js'
import type { NewNotification } from '../../domain/ward-events.js'
import { newId } from '../../lib/ids.js'
import { DIRECTIONS, type Notification } from '../../schemas/notifications.js'
import { inWriteTransaction, writeAlone } from '../data-version.js'

export type { NewNotification }

import { DEFAULT_BUSY_TIMEOUT_MS } from '../connection.js'
import { createLister, type JsonPage, jsonPageBytes, type Page, pick } from '../query/list.js'
import { type ListQuery, parseListQuery } from '../query/query.js'
import { createReadMemo } from '../read-memo.js'
import { StorageState } from '../storage-faults.js'
import { createWriteQueue, type WriteQueue } from '../write-queue.js'
import { createFeedLog, type FeedLog } from './feed.js'
import {
  audienceCondition,
  fieldsFor,
  forViewer,
  type Mark,
  type NotificationSnapshot,
  narrowed,
  seenCondition,
  type Viewer,
} from './notification-audience.js'
import { createInbox, inboxAnswers, type SeenFilter } from './notification-inbox.js'
import { type NotificationRow as Row, toRecord } from './notification-rows.js'

export { NOTIFICATION_FIELDS, type Viewer } from './notification-audience.js'
export { DIRECTIONS }

export interface NotificationRepositoryOptions {
  /**
   * Memory for inbox pages remembered while the database is unchanged (db/read-memo.ts); 0 (the
   * default for tools and tests that make their own repository) remembers none.
   */
  pageCacheBytes?: number
  /** The server's feed log (its hub hears each append at once). */
  feed?: FeedLog
  /** The server's write queue (marks join its group commits). */
  writes?: WriteQueue
}

export function createNotificationRepository(db: Database, options: NotificationRepositoryOptions = {}) {
  const insert = db.prepare(
    `INSERT INTO notifications (id, created_at, facility, code, type, title, body, meta, direction, broadcast, recipients, unbound_only)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  // The addressee row carries the notification's time and audience: its inbox index (migration 9).
  const insertRecipient = db.prepare(
    `INSERT INTO notification_recipients (account, notification_id, created_at, facility, unbound_only)
     VALUES (:account, :id, :createdAt, :facility, :unboundOnly)`,
  )
  const byId = db.prepare<[string], Row>('SELECT * FROM notifications WHERE id = ?')
  const isRecipient = db.prepare<[string, string], { one: number }>(
    'SELECT 1 AS one FROM notification_recipients WHERE account = ? AND notification_id = ?',
  )
  const insertSeen = db.prepare(
    'INSERT OR IGNORE INTO notification_seen (notification_id, account, seen_at, facility) VALUES (?, ?, ?, ?)',
  )
  // The marks of the given notifications (a JSON array of ids) that a facility-bound viewer may
  // learn of; one search of the primary key per notification.
  const visibleMarks = db.prepare<[string, string, string], { notification_id: string; account: string }>(
    `SELECT notification_id, account FROM notification_seen
     WHERE notification_id IN (SELECT value FROM json_each(?)) AND (facility = ? OR account = ?)`,
  )
  const appendSeenBy = db.prepare(`UPDATE notifications SET seen_by = json_insert(seen_by, '$[#]', ?) WHERE id = ?`)
  const marksOf = db.prepare<[string], Mark>(
    'SELECT account, facility FROM notification_seen WHERE notification_id = ?',
  )
  const list = createLister<Row, Notification>(db, 'notifications', toRecord)
  const inbox = createInbox(db)
  const inboxPages = createReadMemo<JsonPage>(db, options.pageCacheBytes ?? 0, jsonPageBytes)
  // Without a server (the CLI, a script), a feed log and a write queue of this connection's own:
  // the server's feed finds what they append by polling. The server passes its shared ones.
  const feed = options.feed ?? createFeedLog(db)
  const writes =
    options.writes ?? createWriteQueue(db, { storage: new StorageState(), busyTimeoutMs: DEFAULT_BUSY_TIMEOUT_MS })

  /** The live feed's event for a new notification or a new mark, in the same transaction. */
  function appendToFeed(row: Row, reader?: Mark): void {
    const snapshot: NotificationSnapshot = {
      record: toRecord(row),
      broadcast: row.broadcast === 1,
      unboundOnly: row.unbound_only === 1,
      marks: reader ? marksOf.all(row.id) : [],
    }
    if (reader) snapshot.reader = reader
    feed.append({
      resource: 'notifications',
      action: reader ? 'patched' : 'created',
      recordId: row.id,
      facility: row.facility,
      payload: JSON.stringify(snapshot),
    })
  }

  /** The row if the viewer may see it; otherwise 404, revealing nothing about other facilities or accounts. */
  function visibleRow(viewer: Viewer, id: string): Row {
    const row = byId.get(id)
    const facilityOk =
      row &&
      (viewer.facility === null ||
        row.facility === viewer.facility ||
        (row.facility === null && row.unbound_only === 0))
    if (!row || !facilityOk || (row.broadcast === 0 && !isRecipient.get(viewer.account, id)))
      throw new NotFoundError('notification', id)
    return row
  }

  /** The readers a facility-bound viewer may learn of, by notification; undefined: every reader. */
  function readersFor(viewer: Viewer, records: Partial<Notification>[]): Map<string, Set<string>> | undefined {
    if (viewer.facility === null) return undefined
    const readers = new Map<string, Set<string>>()
    const ids = records.filter((r) => r.seenBy && r.seenBy.length > 0).map((r) => r.id as string)
    if (ids.length === 0) return readers
    for (const mark of visibleMarks.iterate(JSON.stringify(ids), viewer.facility, viewer.account)) {
      const set = readers.get(mark.notification_id) ?? new Set<string>()
      set.add(mark.account)
      readers.set(mark.notification_id, set)
    }
    return readers
  }

  function shown(viewer: Viewer, record: Notification): Notification {
    return forViewer(viewer, record, readersFor(viewer, [record]))
  }

  /**
   * Stores a notification and its feed event. Inside the write queue's transaction (a ward
   * occupant change emitting its event) it needs no transaction of its own: a failure after the
   * insert makes the queue roll the batch back and run it again without that write, so the change
   * and its notification still commit or vanish together (write-queue.ts). Alone (the CLI, a
   * script) it is one immediate transaction.
   */
  function insertNotification(input: NewNotification): Notification {
    if (input.unboundOnly && input.facility !== null)
      throw new Error('a notification only for callers without a facility cannot have a facility')
    const now = Date.now()
    const to = [...new Set(input.to ?? [])]
    // The row as stored (seen_by starts as the column's default): its record needs no second read.
    const row: Row = {
      id: newId(now),
      created_at: input.createdAt ?? now,
      facility: input.facility,
      code: input.code,
      type: input.type,
      title: input.title,
      body: input.body,
      meta: input.meta === undefined ? null : JSON.stringify(input.meta),
      direction: input.direction ?? null,
      broadcast: to.length === 0 ? 1 : 0,
      unbound_only: input.unboundOnly ? 1 : 0,
      recipients: to.length === 0 ? null : JSON.stringify(to),
      seen_by: '[]',
    }
    insert.run(
      row.id,
      row.created_at,
      row.facility,
      row.code,
      row.type,
      row.title,
      row.body,
      row.meta,
      row.direction,
      row.broadcast,
      row.recipients,
      row.unbound_only,
    )
    for (const account of to)
      insertRecipient.run({
        account,
        id: row.id,
        createdAt: row.created_at,
        facility: row.facility,
        unboundOnly: row.unbound_only,
      })
    appendToFeed(row)
    return toRecord(row)
  }
  const createAlone = db.transaction(insertNotification)

  // Runs inside the write queue's transaction (group commit): no transaction of its own.
  function markSeen(viewer: Viewer, id: string): Notification {
    visibleRow(viewer, id)
    // The reader's facility decides who else may learn of the mark (readersFor, boundFields).
    const marked = insertSeen.run(id, viewer.account, Date.now(), viewer.facility).changes === 1
    if (marked) appendSeenBy.run(viewer.account, id)
    const row = byId.get(id) as Row
    // Marking again changes nothing, so it is no event either.
    if (marked) appendToFeed(row, { account: viewer.account, facility: viewer.facility })
    return shown(viewer, toRecord(row))
  }

  // The page and the readers shown on it are read in one read transaction, so they agree even
  // while another connection writes.
  const listPage = db.transaction((viewer: Viewer, query: Record<string, unknown>) => {
    const page = pageOf(viewer, query)
    const readers = readersFor(viewer, page.records)
    return { ...page, records: page.records.map((r) => forViewer(viewer, r, readers)) }
  })

  /** Without filters, in time order, the inbox answers (notification-inbox.ts); else the general lister. */
  function pageOf(viewer: Viewer, query: Record<string, unknown>): Page<Partial<Notification> & { id: string }> {
    const { base, parsed } = listFor(viewer, query)
    if (!inboxAnswers(parsed)) return list(base, parsed)
    const { total, rows } = inbox.page<Row>(viewer, seenFilter(query.$unseen), parsed)
    const page = { total, limit: parsed.limit, skip: parsed.skip }
    if (parsed.limit === 0 || parsed.skip >= total) return { records: [], ...page }
    return { records: selected(rows().map(toRecord), parsed), ...page }
  }

  /**
   * Without filters, paging of whole records in time order: the page as JSON text written by SQLite
   * (what the response schema would write), or null when the query needs the general path.
   */
  const jsonPage = db.transaction((viewer: Viewer, query: Record<string, unknown>, remember: boolean) => {
    const { parsed } = listFor(viewer, query)
    if (!inboxAnswers(parsed) || parsed.select) return null
    const seen = seenFilter(query.$unseen)
    const compute = (): JsonPage => {
      const { total, json } = inbox.jsonPage(viewer, seen, parsed)
      return { total, json, limit: parsed.limit, skip: parsed.skip }
    }
    if (!remember) return compute()
    // Everything the page depends on besides the database: who asks (the role decides `to`) and what.
    const key = JSON.stringify([
      viewer.account,
      viewer.facility,
      viewer.role,
      seen,
      parsed.orderBy,
      parsed.limit,
      parsed.skip,
    ])
    return inboxPages.remember(key, compute)
  })

  function listFor(viewer: Viewer, query: Record<string, unknown>) {
    const { $unseen, ...rest } = query
    const parsed = parseListQuery(rest, fieldsFor(viewer))
    const seen = seenCondition(viewer, $unseen)
    const base = seen ? narrowed(audienceCondition(viewer), seen) : audienceCondition(viewer)
    return { base, parsed }
  }

  return {
    create(input: NewNotification): Notification {
      return inWriteTransaction(db) ? insertNotification(input) : writeAlone(db, createAlone, input)
    },
    get: (viewer: Viewer, id: string): Notification => shown(viewer, toRecord(visibleRow(viewer, id))),
    list: (viewer: Viewer, query: Record<string, unknown>) => listPage(viewer, query),
    /** The list as JSON text when the inbox answers it (no filter, time order, whole records); else null. */
    listJson: (viewer: Viewer, query: Record<string, unknown>): JsonPage | null =>
      // Inside a caller's open transaction the page may hold changes that are then rolled back
      // (which leave the database's counters moved on as if they stayed): never remembered.
      jsonPage(viewer, query, !inWriteTransaction(db)),
    /** How many notifications matching the query's filters the viewer has not marked seen. */
    unseenCount(viewer: Viewer, query: Record<string, unknown>): number {
      const { base, parsed } = listFor(viewer, { ...query, $unseen: 'true', $limit: '0', $skip: '0' })
      // Without filters the counters answer; the order does not matter for a count.
      if (parsed.filter.sql === '1') return inbox.count(viewer, 'unseen')
      return list(base, parsed).total
    },
    /** Through the group commit (write-queue.ts), like every other write. */
    markSeen: (viewer: Viewer, id: string): Promise<Notification> => writes.run(() => markSeen(viewer, id)),
  }
}

function seenFilter(unseen: unknown): SeenFilter {
  return unseen === 'true' ? 'unseen' : unseen === 'false' ? 'seen' : 'all'
}

function selected(records: Notification[], query: ListQuery): (Partial<Notification> & { id: string })[] {
  return query.select ? records.map((r) => pick(r, query.select as string[])) : records
}

export type NotificationRepository = ReturnType<typeof createNotificationRepository>
