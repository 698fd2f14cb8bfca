import type { Database } from 'better-sqlite3'

export type ReadOperation = 'get' | 'list' | 'render'

/** One read request, as the read-audit plugin saw it answered. */
export interface ReadRecord {
  account: string
  tokenId: string
  facility: string | null
  resource: string
  operation: ReadOperation
  route: string
  status: number
  /** The record read (get, render); null for a list. */
  recordId: string | null
  /** A list's filter names (never values); null for a single record. */
  filters: string[] | null
  /** How many records a list matched; null for a single record, or an answer that was not 200. */
  total: number | null
}

export interface ReadEntry extends ReadRecord {
  seq: number
  at: number
}

export interface ReadFilter {
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

interface ReadRow {
  seq: number
  at: number
  account: string
  token_id: string
  facility: string | null
  resource: string
  operation: ReadOperation
  route: string
  status: number
  record_id: string | null
  filters: string | null
  total: number | null
}

function toEntry(row: ReadRow): ReadEntry {
  return {
    seq: row.seq,
    at: row.at,
    account: row.account,
    tokenId: row.token_id,
    facility: row.facility,
    resource: row.resource,
    operation: row.operation,
    route: row.route,
    status: row.status,
    recordId: row.record_id,
    filters: row.filters === null ? null : (JSON.parse(row.filters) as string[]),
    total: row.total,
  }
}

// Pruning deletes at most this many rows per transaction, so it never holds the write lock long.
const PRUNE_BATCH = 5000

/** The read log (schema.sql migration 8): who read which record, or which list, when. */
export function createReadLog(db: Database) {
  const insert = db.prepare(
    `INSERT INTO read_log (at, account, token_id, facility, resource, operation, route, status, record_id, filters, total)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  const filters = `(:resource IS NULL OR resource = :resource)
       AND (:recordId IS NULL OR record_id = :recordId)
       AND (:facility IS NULL OR facility = :facility)
       AND (:account IS NULL OR account = :account)
       AND (:since IS NULL OR at >= :since)
       AND seq > :afterSeq`
  const page = 'ORDER BY seq LIMIT :limit OFFSET :skip'
  const select = db.prepare<Record<string, unknown>, ReadRow>(`SELECT * FROM read_log WHERE ${filters} ${page}`)
  // The same filters led by the equality an index answers (the optional terms hide it from the
  // planner): who read a record (read_log_record), the reads of a facility's tokens (read_log_facility).
  const selectRecord = db.prepare<Record<string, unknown>, ReadRow>(
    `SELECT * FROM read_log WHERE record_id = :recordId AND ${filters} ${page}`,
  )
  const selectFacility = db.prepare<Record<string, unknown>, ReadRow>(
    `SELECT * FROM read_log WHERE facility = :facility AND ${filters} ${page}`,
  )
  const pruneBatch = db.prepare(
    `DELETE FROM read_log WHERE seq IN (SELECT seq FROM read_log WHERE at < ? ORDER BY at LIMIT ${PRUNE_BATCH})`,
  )

  function append(read: ReadRecord, at = Date.now()): void {
    insert.run(
      at,
      read.account,
      read.tokenId,
      read.facility,
      read.resource,
      read.operation,
      read.route,
      read.status,
      read.recordId,
      read.filters === null ? null : JSON.stringify(read.filters),
      read.total,
    )
  }

  function list(filter: ReadFilter): ReadEntry[] {
    const statement =
      filter.recordId !== undefined ? selectRecord : filter.facility !== undefined ? selectFacility : select
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

  /** Deletes one batch of entries older than `before`; returns how many, so callers can loop. */
  function prune(before: number): number {
    return pruneBatch.run(before).changes
  }

  return { append, list, prune }
}

export type ReadLog = ReturnType<typeof createReadLog>
