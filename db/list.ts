import type { Database, Statement } from 'better-sqlite3'
import type { Condition, ListQuery } from './query.js'

/** What a caller may see before any filter of its own: its facility, or everything. */
export interface Scope {
  facility: string | null
}

export function facilityCondition(scope: Scope, column = 'r.facility'): Condition {
  return scope.facility === null ? { sql: '1', params: [] } : { sql: `${column} = ?`, params: [scope.facility] }
}

export interface Page<T> {
  records: T[]
  total: number
  limit: number
  skip: number
}

const CACHE_SIZE = 256

/**
 * Runs list queries over one table (aliased `r`). The SQL text depends only on the shape of the
 * query, so statements are cached by text and reused; the oldest is dropped past CACHE_SIZE.
 */
export function createLister<Row, Rec extends { id: string }>(
  db: Database,
  table: string,
  toRecord: (row: Row) => Rec,
) {
  const statements = new Map<string, Statement>()

  function prepare(sql: string): Statement {
    let statement = statements.get(sql)
    if (!statement) {
      statement = db.prepare(sql)
      if (statements.size >= CACHE_SIZE) statements.delete(statements.keys().next().value as string)
      statements.set(sql, statement)
    }
    return statement
  }

  return function list(base: Condition, query: ListQuery): Page<Partial<Rec> & { id: string }> {
    const where = `(${base.sql}) AND (${query.filter.sql})`
    const params = [...base.params, ...query.filter.params]
    const { n: total } = prepare(`SELECT count(*) AS n FROM ${table} r WHERE ${where}`).get(...params) as { n: number }
    const page = { total, limit: query.limit, skip: query.skip }
    if (query.limit === 0 || query.skip >= total) return { records: [], ...page }
    const rows = prepare(`SELECT r.* FROM ${table} r WHERE ${where} ORDER BY ${query.orderBy} LIMIT ? OFFSET ?`).all(
      ...params,
      query.limit,
      query.skip,
    ) as Row[]
    const records = rows.map(toRecord)
    return { records: query.select ? records.map((r) => pick(r, query.select as string[])) : records, ...page }
  }
}

function pick<T extends { id: string }>(record: T, names: string[]): Partial<T> & { id: string } {
  const out = { id: record.id } as Partial<T> & { id: string }
  for (const name of names) {
    if (Object.hasOwn(record, name)) out[name as keyof T] = record[name as keyof T]
  }
  return out
}
