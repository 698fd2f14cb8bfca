import type { Database, Statement } from 'better-sqlite3'
import type { ReadMemo } from '../read-memo.js'
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

/** Prepared statements by SQL text; the oldest is dropped past CACHE_SIZE. */
function statementCache(db: Database) {
  const statements = new Map<string, Statement>()
  return function prepare(sql: string): Statement {
    let statement = statements.get(sql)
    if (!statement) {
      statement = db.prepare(sql)
      if (statements.size >= CACHE_SIZE) statements.delete(statements.keys().next().value as string)
      statements.set(sql, statement)
    }
    return statement
  }
}

function countOf(prepare: (sql: string) => Statement, table: string, where: string, params: unknown[]): number {
  return (prepare(`SELECT count(*) AS n FROM ${table} r WHERE ${where}`).get(...params) as { n: number }).n
}

/**
 * A base condition that is the OR of disjoint branches (no row matches two), each answerable by
 * an index search of its own: a viewer's notifications are its facility's, every facility's and
 * its own. SQLite answers an OR by collecting every matching row and sorting them all, however
 * small the page; with the branches, each one yields only its first `skip + limit` rows in the
 * page's order (an index walk that stops early), the page is cut from their union, and the total is
 * the sum of the branches' counts.
 */
export interface BranchedCondition extends Condition {
  branches?: readonly Condition[]
}

function where(branch: Condition, query: ListQuery): Condition {
  return { sql: `(${branch.sql}) AND (${query.filter.sql})`, params: [...branch.params, ...query.filter.params] }
}

function branchedTotal(prepare: (sql: string) => Statement, table: string, parts: Condition[]): number {
  const counts = parts.map((part) => `(SELECT count(*) FROM ${table} r WHERE ${part.sql})`)
  const statement = prepare(`SELECT ${counts.join(' + ')} AS n`)
  return (statement.get(...parts.flatMap((part) => part.params)) as { n: number }).n
}

function branchedPageSql(table: string, parts: Condition[], orderBy: string): string {
  const firsts = parts.map(
    (part) => `SELECT rowid FROM (SELECT r.rowid FROM ${table} r WHERE ${part.sql} ORDER BY ${orderBy} LIMIT ?)`,
  )
  return `SELECT r.* FROM ${table} r WHERE r.rowid IN (${firsts.join(' UNION ALL ')}) ORDER BY ${orderBy} LIMIT ? OFFSET ?`
}

/**
 * Runs list queries over one table (aliased `r`). The SQL text depends only on the shape of the
 * query, so statements are cached by text and reused.
 */
export function createLister<Row, Rec extends { id: string }>(
  db: Database,
  table: string,
  toRecord: (row: Row) => Rec,
) {
  const prepare = statementCache(db)

  function rowsOf(base: BranchedCondition, query: ListQuery): { total: number; rows: () => Row[] } {
    if (base.branches && base.branches.length > 1) {
      const parts = base.branches.map((branch) => where(branch, query))
      const first = query.skip + query.limit
      return {
        total: branchedTotal(prepare, table, parts),
        rows: () =>
          prepare(branchedPageSql(table, parts, query.orderBy)).all(
            ...parts.flatMap((part) => [...part.params, first]),
            query.limit,
            query.skip,
          ) as Row[],
      }
    }
    const { sql, params } = where(base, query)
    return {
      total: countOf(prepare, table, sql, params),
      rows: () =>
        prepare(`SELECT r.* FROM ${table} r WHERE ${sql} ORDER BY ${query.orderBy} LIMIT ? OFFSET ?`).all(
          ...params,
          query.limit,
          query.skip,
        ) as Row[],
    }
  }

  return function list(base: BranchedCondition, query: ListQuery): Page<Partial<Rec> & { id: string }> {
    const { total, rows } = rowsOf(base, query)
    const page = { total, limit: query.limit, skip: query.skip }
    if (query.limit === 0 || query.skip >= total) return { records: [], ...page }
    const records = rows().map(toRecord)
    return { records: query.select ? records.map((r) => pick(r, query.select as string[])) : records, ...page }
  }
}

export function pick<T extends { id: string }>(record: T, names: string[]): Partial<T> & { id: string } {
  const out = { id: record.id } as Partial<T> & { id: string }
  for (const name of names) {
    if (Object.hasOwn(record, name)) out[name as keyof T] = record[name as keyof T]
  }
  return out
}

/** A scalar field as SQLite writes it into a record's JSON: its name there, its column, and whether NULL leaves it out. */
export interface JsonField {
  name: string
  column: string
  optional: boolean
}

/** How SQLite writes a record's JSON text, and how the members of its NULL optional fields are then dropped. */
export interface JsonRecord {
  /** json_object(...) over the fields, in their order: strings escaped as JSON wants, numbers as numbers. */
  sql: string
  /** Drops `"name":null` for the optional fields, from the text of one record or of many joined. */
  clean(json: string): string
}

/**
 * JSON text of records of `alias`, written by SQLite, with an optional field left out when its
 * column is NULL, as the response schemas do. json_object() writes `"room":null` for those; they
 * are cut from the text afterwards, which is safe because inside a JSON string every `"` is
 * escaped, so `,"room":null` can only ever be a member, never a value's text. (Leaving them out in
 * SQL, with iif() per field, costs more than the whole cut.) The first field must be a required
 * one (the id), so every member cut starts with a comma.
 */
export function jsonRecord(fields: readonly JsonField[], alias = 'r'): JsonRecord {
  if (fields[0]?.optional !== false) throw new Error('the first field of a JSON record must be a required one')
  const members = fields.map(({ name, column }) => `'${name.replaceAll("'", "''")}', ${alias}.${column}`)
  const optional = fields
    .filter((f) => f.optional)
    .map((f) => JSON.stringify(f.name).replace(/[\\^$.*+?()[\]{}|]/g, '\\$&'))
  const nulls = optional.length > 0 ? new RegExp(`,(?:${optional.join('|')}):null`, 'g') : null
  return {
    sql: `json_object(${members.join(', ')})`,
    clean: nulls ? (json) => json.replace(nulls, '') : (json) => json,
  }
}

export interface JsonPage {
  /** The records, as the text of a JSON array. */
  json: string
  total: number
  limit: number
  skip: number
}

/** The memory a remembered page holds: a JavaScript string takes about two bytes per character. */
export function jsonPageBytes(page: JsonPage): number {
  return 2 * page.json.length + 64
}

/**
 * The same lists as createLister, for records whose fields are all scalar columns, with SQLite
 * writing the records' JSON (jsonRecord) instead of JavaScript building objects and Fastify
 * serializing them again: for 50 records that is about a third of the time. The caller sends the
 * text as it is; it holds exactly the fields the response schema names.
 */
export function createJsonLister(
  db: Database,
  table: string,
  fields: readonly JsonField[],
  memo?: ReadMemo<JsonPage>,
): (base: Condition, query: ListQuery) => JsonPage {
  const prepare = statementCache(db)
  // Keyed by the short parts of the query; the record's SQL (a kilobyte) is built once per selection.
  const pages = new Map<string, { statement: Statement; record: JsonRecord }>()
  const allFields = jsonRecord(fields)

  function pageStatement(where: string, query: ListQuery) {
    const key = `${query.select?.join(',') ?? '*'}\n${where}\n${query.orderBy}`
    let page = pages.get(key)
    if (!page) {
      const selected = query.select ? fields.filter((f) => f.name === 'id' || query.select?.includes(f.name)) : null
      const record = selected ? jsonRecord(selected) : allFields
      const sql = `SELECT ${record.sql} FROM ${table} r WHERE ${where} ORDER BY ${query.orderBy} LIMIT ? OFFSET ?`
      page = { statement: db.prepare(sql).pluck(), record }
      if (pages.size >= CACHE_SIZE) pages.delete(pages.keys().next().value as string)
      pages.set(key, page)
    }
    return page
  }

  // One read transaction for the count and the page: one lock instead of two, and a total that
  // always matches the records, even while another process (the CLI) writes.
  function read(where: string, params: unknown[], query: ListQuery): JsonPage {
    const total = countOf(prepare, table, where, params)
    const page = { total, limit: query.limit, skip: query.skip }
    if (query.limit === 0 || query.skip >= total) return { json: '[]', ...page }
    const { statement, record } = pageStatement(where, query)
    const records = statement.all(...params, query.limit, query.skip) as string[]
    return { json: record.clean(`[${records.join(',')}]`), ...page }
  }

  return db.transaction(function list(base: Condition, query: ListQuery): JsonPage {
    const where = `(${base.sql}) AND (${query.filter.sql})`
    const params = [...base.params, ...query.filter.params]
    if (!memo) return read(where, params, query)
    // Everything the page depends on besides the rows: the scope and the query, as SQL and values,
    // each value with its type (JSON alone writes null for a number that is not finite).
    const values = params.map((value) => (value === null ? 'null' : `${typeof value}:${String(value)}`))
    const key = JSON.stringify([where, values, query.orderBy, query.limit, query.skip, query.select])
    return memo.remember(key, () => read(where, params, query))
  })
}
