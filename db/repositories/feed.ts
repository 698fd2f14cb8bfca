import type { Database } from 'better-sqlite3'
import type { FeedAction, FeedResource } from '../../schemas/events.js'
import { inWriteTransaction, writeAlone } from '../data-version.js'

export type { FeedAction, FeedResource }

/**
 * Who of those who may read the event's facility is told of it: everyone (null), only the tokens
 * bound to that facility ('bound'), only the tokens without a facility ('unbound'). The last two
 * are the per-side events of a move (changeEvents).
 */
export type FeedAudience = 'bound' | 'unbound' | null

export interface FeedChange {
  resource: FeedResource
  action: FeedAction
  recordId: string
  facility: string | null
  audience?: FeedAudience
  /** JSON text: the record as of the change, or for notifications a NotificationSnapshot. */
  payload: string
}

export interface FeedEvent extends FeedChange {
  seq: number
  at: number
  audience: FeedAudience
}

interface Row {
  seq: number
  at: number
  resource: FeedResource
  action: FeedAction
  record_id: string
  facility: string | null
  audience: FeedAudience
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
    audience: row.audience,
    payload: row.payload,
  }
}

const ACTIONS = { create: 'created', patch: 'patched', delete: 'removed' } as const

export interface RecordChange {
  resource: FeedResource
  recordId: string
  facility: string | null
  operation: keyof typeof ACTIONS
  before: object | null
  after: object | null
}

/** The facility a record names (every record that has one calls it `facility`); null: none. */
export function facilityOf(record: object | null): string | null {
  const facility = (record as { facility?: unknown } | null)?.facility
  return typeof facility === 'string' ? facility : null
}

/** A change's record before and after it, as JSON text (null where there is none). */
export interface RecordTexts {
  before: string | null
  after: string | null
}

export function recordTexts(change: Pick<RecordChange, 'before' | 'after'>): RecordTexts {
  return {
    before: change.before === null ? null : JSON.stringify(change.before),
    after: change.after === null ? null : JSON.stringify(change.after),
  }
}

/**
 * The feed events of an audited change to a record. A removal carries the record as it was.
 * A change that moves the record to another facility is told to each side as far as it could
 * read it, whatever the record: the tokens bound to the old facility see it removed as it was
 * there, those bound to the new one see it created as it is now, and the tokens without a
 * facility, who read both, see it patched (docs/EVENTS.md, "Moves").
 */
export function changeEvents(change: RecordChange, texts: RecordTexts = recordTexts(change)): FeedChange[] {
  const base = { resource: change.resource, recordId: change.recordId }
  const from = change.before === null ? null : facilityOf(change.before)
  const to = change.after === null ? null : facilityOf(change.after)
  if (change.operation !== 'patch' || from === to) {
    const payload = (change.after === null ? texts.before : texts.after) as string
    return [{ ...base, action: ACTIONS[change.operation], facility: change.facility, payload }]
  }
  const events: FeedChange[] = []
  if (from !== null)
    events.push({
      ...base,
      action: 'removed',
      facility: from,
      audience: 'bound',
      payload: texts.before as string,
    })
  if (to !== null)
    events.push({ ...base, action: 'created', facility: to, audience: 'bound', payload: texts.after as string })
  events.push({ ...base, action: 'patched', facility: to, audience: 'unbound', payload: texts.after as string })
  return events
}

/** Events forgotten per prune call: a bound on what one call changes in one transaction. */
export const PRUNE_CHUNK = 5000

/**
 * The feed's log of changes (migration 7). `append` must run inside the transaction of the change
 * it describes. Reads see only what is committed, in seq order, which is commit order.
 */
export function createFeedLog(db: Database) {
  const insert = db.prepare(
    `INSERT INTO feed_events (at, resource, action, record_id, facility, audience, payload)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  )
  const after = db.prepare<[number, number, number], Row>(
    'SELECT * FROM feed_events WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?',
  )
  // One statement, so one read transaction (its lock round trip) after every commit, not two.
  const headSeq = db
    .prepare<[], number>(
      'SELECT max(coalesce((SELECT max(seq) FROM feed_events), 0), coalesce((SELECT pruned_through FROM feed_state WHERE id = 1), 0))',
    )
    .pluck()
  const prunedStmt = db.prepare<[], number>('SELECT pruned_through FROM feed_state WHERE id = 1').pluck()
  const prunedThrough = (): number => prunedStmt.get() ?? 0
  // The last event older than the cutoff among the oldest PRUNE_CHUNK: read in seq order from the
  // start of the log, so no index on `at` is written with every event (the times grow with seq; a
  // clock set back only keeps some events longer).
  const lastBefore = db
    .prepare<[number], number | null>(
      `SELECT max(seq) FROM (SELECT seq, at FROM feed_events ORDER BY seq LIMIT ${PRUNE_CHUNK}) WHERE at < ?`,
    )
    .pluck()
  const remove = db.prepare('DELETE FROM feed_events WHERE seq <= ?')
  const markPruned = db.prepare('UPDATE feed_state SET pruned_through = max(pruned_through, ?) WHERE id = 1')

  // Whoever waits for new events (the feed hub) is told after each append. It must not read at
  // once: the append is inside a transaction that may still roll back. It reads once the
  // transaction is over, from what is committed.
  const appendListeners = new Set<() => void>()

  function append(change: FeedChange, at = Date.now()): void {
    const { resource, action, recordId, facility, audience, payload } = change
    insert.run(at, resource, action, recordId, facility, audience ?? null, payload)
    for (const listener of appendListeners) listener()
  }

  /** Calls `listener` after every append through this log (inside the appending transaction). */
  function onAppend(listener: () => void): () => void {
    appendListeners.add(listener)
    return () => appendListeners.delete(listener)
  }

  /** The newest committed seq (0 for an empty log that was never pruned). */
  function head(): number {
    return headSeq.get() ?? 0
  }

  /**
   * Forgets the oldest events older than `before` (ms), at most PRUNE_CHUNK of them; returns how
   * many. Always a prefix of the log, so "what is kept" is one number: resuming after
   * pruned_through is complete.
   */
  const prune = db.transaction((before: number): number => {
    // At most PRUNE_CHUNK events per call (retention calls again while some were deleted): this
    // runs inside the write queue's transaction, whose statement journal is in memory
    // (db/statement-journals.ts), so a backlog of days is not held there all at once.
    const upTo = lastBefore.get(before)
    if (upTo === null || upTo === undefined) return 0
    const { changes } = remove.run(upTo)
    markPruned.run(upTo)
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
    prune(before: number): number {
      return inWriteTransaction(db) ? prune(before) : writeAlone(db, prune, before)
    },
  }
}

export type FeedLog = ReturnType<typeof createFeedLog>
