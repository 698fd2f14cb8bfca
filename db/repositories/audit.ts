import type { Database } from 'better-sqlite3'
import type { Principal } from '../../domain/principal.js'
import { type FeedResource, facilityOf, recordTexts } from './feed.js'

export type AuditOperation = 'create' | 'patch' | 'delete'

/**
 * What an audit entry is about: a record of the live feed's resources, or `beds`, the list of beds
 * an administrator keeps for the board (`facility-service beds add|remove`), which the feed does
 * not carry.
 */
export type AuditResource = FeedResource | 'beds'

export interface AuditChange {
  resource: AuditResource
  recordId: string
  facility: string | null
  operation: AuditOperation
  before: object | null
  after: object | null
}

export interface AuditEntry extends AuditChange {
  seq: number
  at: number
  account: string
  tokenId: string | null
  /** The facility of the record after the change: another than `facility` when it moved. */
  facilityAfter: string | null
}

export interface AuditFilter {
  resource?: string
  recordId?: string
  facility?: string
  account?: string
  since?: number
  afterSeq?: number
  limit: number
  /** Entries to pass over after `afterSeq`, as `$skip` of the other lists. */
  skip?: number
}

interface AuditRow {
  seq: number
  at: number
  account: string
  token_id: string | null
  facility: string | null
  facility_after: string | null
  resource: AuditResource
  record_id: string
  operation: AuditOperation
  before: string | null
  after: string | null
}

function toEntry(row: AuditRow): AuditEntry {
  return {
    seq: row.seq,
    at: row.at,
    account: row.account,
    tokenId: row.token_id,
    facility: row.facility,
    facilityAfter: row.facility_after,
    resource: row.resource,
    recordId: row.record_id,
    operation: row.operation,
    before: row.before === null ? null : JSON.parse(row.before),
    after: row.after === null ? null : JSON.parse(row.after),
  }
}

/**
 * The audit trail. `append` must be called inside the transaction that makes the change, so the
 * change and its entry commit or roll back together. Triggers in schema.sql refuse updates and
 * deletes of the log. The repository that makes the change also appends its feed events
 * (feed.ts, `changeEvents`), from the same change, in the same transaction (changes.ts).
 */
export function createAuditLog(db: Database) {
  const insert = db.prepare(
    `INSERT INTO audit_log (at, account, token_id, facility, facility_after, resource, record_id, operation, before, after)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  const filters = `(:resource IS NULL OR resource = :resource)
       AND (:recordId IS NULL OR record_id = :recordId)
       AND (:facility IS NULL OR facility = :facility OR facility_after = :facility)
       AND (:account IS NULL OR account = :account)
       AND (:since IS NULL OR at >= :since)
       AND seq > :afterSeq`
  const select = db.prepare<Record<string, unknown>, AuditRow>(
    `SELECT * FROM audit_log WHERE ${filters} ORDER BY seq LIMIT :limit OFFSET :skip`,
  )
  // A record's history: the same filters led by the two equalities its index (audit_log_record)
  // answers, which the optional terms above would hide from the planner.
  const selectRecord = db.prepare<Record<string, unknown>, AuditRow>(
    `SELECT * FROM audit_log WHERE resource = :resource AND record_id = :recordId AND ${filters}
     ORDER BY seq LIMIT :limit OFFSET :skip`,
  )
  /** `texts`: the change's records as JSON, when the caller has already written them. */
  function append(actor: Principal, change: AuditChange, at = Date.now(), texts = recordTexts(change)): void {
    const { before, after } = texts
    insert.run(
      at,
      actor.account,
      actor.tokenId,
      change.facility,
      change.after === null ? change.facility : facilityOf(change.after),
      change.resource,
      change.recordId,
      change.operation,
      before,
      after,
    )
  }

  function list(filter: AuditFilter): AuditEntry[] {
    const statement = filter.resource !== undefined && filter.recordId !== undefined ? selectRecord : select
    return statement
      .all({
        resource: filter.resource ?? null,
        recordId: filter.recordId ?? null,
        facility: filter.facility ?? null,
        account: filter.account ?? null,
        since: filter.since ?? null,
        afterSeq: filter.afterSeq ?? 0,
        limit: filter.limit,
        skip: filter.skip ?? 0,
      })
      .map(toEntry)
  }

  return { append, list }
}

/**
 * An entry as an administrator bound to `facility` may read it: of a record that moved, only the
 * side that was in its facility, as GET showed it there (the other side null), and the entry
 * labelled with its own facility, so it learns neither where the record went nor where it came
 * from. Every other entry it is shown is of its facility on both sides and stays as it is.
 */
export function auditEntryFor(facility: string | null, entry: AuditEntry): AuditEntry {
  if (facility === null || entry.facility === entry.facilityAfter) return entry
  const before = entry.facility === facility ? entry.before : null
  const after = entry.facilityAfter === facility ? entry.after : null
  return { ...entry, facility, facilityAfter: facility, before, after }
}

export type AuditLog = ReturnType<typeof createAuditLog>
