import type { Database } from 'better-sqlite3'

import type { FeedAction, FeedResource } from '../../schemas/events.js'

export type { FeedAction, FeedResource }

export interface FeedChange {
  resource: FeedResource
  action: FeedAction
  recordId: string
  facility: string | null
  /** JSON text: the record as of the change, or for notifications a NotificationSnapshot. */
  payload: string
}

export interface FeedEvent extends FeedChange {
  seq: number
  at: number
}

interface Row {
  seq: number
  at: number
  resource: FeedResource
  action: FeedAction
  record_id: string
  facility: string | null
  payload: string
}

function toEvent(row: Row): FeedEvent {
  return {
    seq: row.seq,
    at: row.at,
    resource: row.resource,
    action: row.action,
    recordId: row.record_id,
    facility: row.facility,
    payload: row.payload,
  }
}

const ACTIONS = { create: 'created', patch: 'patched', delete: 'removed' } as const

/** The feed event of an audited change to a record. A removal carries the record as it was. */
export function changeEvent(change: {
  resource: FeedResource
  recordId: string
  facility: string | null
  operation: keyof typeof ACTIONS
  before: object | null
  after: object | null
}): FeedChange {
  return {
    resource: change.resource,
    action: ACTIONS[change.operation],
    recordId: change.recordId,
    facility: change.facility,
    payload: JSON.stringify(change.after ?? change.before),
  }
}

/**
 * The feed's log of changes (migration 7). `append` must run inside the transaction of the change
 * it describes. Reads see only what is committed, in seq order, which is commit order.
 */
export function createFeedLog(db: Database) {
  const insert = db.prepare(
    'INSERT INTO feed_events (at, resource, action, record_id, facility, payload) VALUES (?, ?, ?, ?, ?, ?)',
  )
  const after = db.prepare<[number, number, number], Row>(
    'SELECT * FROM feed_events WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?',
  )
  const maxSeq = db.prepare<[], number | null>('SELECT max(seq) FROM feed_events').pluck()
  const prunedStmt = db.prepare<[], number>('SELECT pruned_through FROM feed_state WHERE id = 1').pluck()
  const prunedThrough = (): number => prunedStmt.get() ?? 0
  const lastBefore = db.prepare<[number], number | null>('SELECT max(seq) FROM feed_events WHERE at < ?').pluck()
  const remove = db.prepare('DELETE FROM feed_events WHERE seq <= ?')
  const markPruned = db.prepare('UPDATE feed_state SET pruned_through = max(pruned_through, ?) WHERE id = 1')

  // Whoever waits for new events (the feed hub) is told after each append. It must not read at
  // once: the append is inside a transaction that may still roll back. It reads once the
  // transaction is over, from what is committed.
  const appendListeners = new Set<() => void>()

  function append(change: FeedChange, at = Date.now()): void {
    insert.run(at, change.resource, change.action, change.recordId, change.facility, change.payload)
    for (const listener of appendListeners) listener()
  }

  /** Calls `listener` after every append through this log (inside the appending transaction). */
  function onAppend(listener: () => void): () => void {
    appendListeners.add(listener)
    return () => appendListeners.delete(listener)
  }

  /** The newest committed seq (0 for an empty log that was never pruned). */
  function head(): number {
    return Math.max(maxSeq.get() ?? 0, prunedThrough())
  }

  /**
   * Forgets the events older than `before` (ms). Always a prefix of the log, so "what is kept" is
   * one number: resuming after pruned_through is complete.
   */
  const prune = db.transaction((before: number): number => {
    const last = lastBefore.get(before)
    if (last === null || last === undefined) return 0
    const { changes } = remove.run(last)
    markPruned.run(last)
    return changes
  })

  return {
    append,
    onAppend,
    head,
    prunedThrough,
    /** Up to `limit` events with seq in (from, through], oldest first. */
    between: (from: number, through: number, limit: number): FeedEvent[] =>
      after.all(from, through, limit).map(toEvent),
    /** Inside a write transaction (the write queue's) or on its own. */
    prune: (before: number): number => (db.inTransaction ? prune(before) : prune.immediate(before)),
  }
}

export type FeedLog = ReturnType<typeof createFeedLog>
