import type { Database } from 'better-sqlite3'
import qs from 'qs'

/**
 * An independent reference for the list endpoints: the records a principal may see, read with
 * plain SQL (`SELECT *`), then filtered, sorted, paged and shaped in memory by the Feathers query
 * rules of docs/API.md. It shares no code with db/query.ts or db/list.ts, so a filter the service
 * ignores, a wrong null rule or a lost sort key shows up as a difference.
 */

export type Kind = 'string' | 'number' | 'array' | 'json'
export interface Spec {
  column: string
  kind: Kind
}
type Row = Record<string, unknown>
export interface Who {
  account: string
  facility: string | null
  role: string
}
export interface Expected {
  ids: string[]
  total: number
  limit: number
  skip: number
  records: Row[]
}

const s = (column: string): Spec => ({ column, kind: 'string' })
const n = (column: string): Spec => ({ column, kind: 'number' })
const COMMON = { id: s('id'), createdAt: n('created_at'), facility: s('facility') }

export const REFERENCE_FIELDS: Record<string, Record<string, Spec>> = {
  ward_occupants: {
    ...COMMON,
    createdBy: s('created_by'),
    encounter: s('encounter'),
    room: s('room'),
    bed: s('bed'),
    provider: s('provider'),
    occupiedAt: n('occupied_at'),
    occupiedBy: s('occupied_by'),
    dischargedAt: n('discharged_at'),
    dischargedBy: s('discharged_by'),
  },
  form_templates: {
    ...COMMON,
    createdBy: s('created_by'),
    type: s('type'),
    subtype: s('subtype'),
    name: s('name'),
    description: s('description'),
    template: s('template'),
    tags: { column: 'tags', kind: 'array' },
    items: { column: 'items', kind: 'json' },
    meta: { column: 'meta', kind: 'json' },
    config: { column: 'config', kind: 'json' },
    hiddenAt: n('hidden_at'),
    hiddenBy: s('hidden_by'),
  },
  notifications: {
    ...COMMON,
    code: s('code'),
    type: s('type'),
    title: s('title'),
    body: s('body'),
    direction: s('direction'),
    meta: { column: 'meta', kind: 'json' },
    seenBy: { column: 'seen_by', kind: 'array' },
  },
}

/** The query string as the service's clients encode it and qs reads it (the options docs/API.md states). */
export function parseQuery(text: string): Record<string, unknown> {
  // What reaches the service is the query as a URL's parser (WHATWG, which inject goes through)
  // leaves it: a raw `#` starts the fragment, raw tabs and line breaks are dropped (a real request
  // line cannot even hold them). So `?#=x` reaches the service as no query at all.
  const delivered = new URL(`http://localhost/?${text}`).search.slice(1)
  return qs.parse(delivered, {
    depth: 5,
    arrayLimit: 1000,
    parameterLimit: 1000,
    plainObjects: true,
    allowPrototypes: true,
  })
}

class Invalid extends Error {}
const invalid = (why: string): never => {
  throw new Invalid(why)
}
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
function list(v: unknown): unknown[] {
  if (Array.isArray(v)) return v
  if (typeof v === 'string') return [v]
  if (isObject(v) && Object.keys(v).every((k) => /^\d+$/.test(k))) return Object.values(v)
  return invalid('not a list')
}
/** SQLite's BINARY collation: UTF-8 bytes; numbers as numbers; NULL below everything. */
function compare(a: unknown, b: unknown): number {
  if (a === null || b === null) return a === b ? 0 : a === null ? -1 : 1
  if (typeof a === 'number' && typeof b === 'number') return a - b
  return Buffer.compare(Buffer.from(String(a)), Buffer.from(String(b)))
}

/** The visible records of a table for `who`, as plain rows plus the notification extras. */
function visibleRows(db: Database, table: string, who: Who): Row[] {
  const rows = db.prepare(`SELECT * FROM ${table}`).all() as Row[]
  if (table !== 'notifications') return rows.filter((r) => who.facility === null || r.facility === who.facility)
  const marks = db.prepare('SELECT notification_id, account, facility FROM notification_seen').all() as Row[]
  return rows
    .filter(
      (r) => who.facility === null || r.facility === who.facility || (r.facility === null && r.unbound_only === 0),
    )
    .filter((r) => r.broadcast === 1 || (JSON.parse(r.recipients as string) as string[]).includes(who.account))
    .map((r) => {
      const mine = marks.filter((m) => m.notification_id === r.id)
      const known = mine.filter(
        (m) => who.facility === null || m.facility === who.facility || m.account === who.account,
      )
      return { ...r, $allMarks: mine.map((m) => m.account), $knownMarks: known.map((m) => m.account) }
    })
}

/** Ids of the notifications visible to `who` (the audience rule, unbound_only included). */
export function visibleIds(db: Database, table: string, who: Who): Set<string> {
  return new Set(visibleRows(db, table, who).map((r) => r.id as string))
}

function convert(spec: Spec, raw: unknown): string | number | null {
  if (typeof raw !== 'string') return invalid('one value')
  // An empty value is null too (docs/API.md: how qs and the Feathers client write null).
  if (raw === 'null' || raw === '') return null
  if (spec.kind !== 'number') return raw
  return /^-?\d+(\.\d+)?$/.test(raw) ? Number(raw) : invalid('a number')
}

function arrayOf(row: Row, name: string, spec: Spec): string[] | null {
  if (name === 'seenBy') return row.$knownMarks as string[]
  if (name === 'to') return row.recipients === null ? null : (JSON.parse(row.recipients as string) as string[])
  return row[spec.column] === null ? null : (JSON.parse(row[spec.column] as string) as string[])
}

function fieldTest(name: string, spec: Spec, raw: unknown): (row: Row) => boolean {
  const ops: [string, unknown][] = isObject(raw) ? Object.entries(raw) : [['$eq', raw]]
  if (ops.length === 0) invalid('no operator')
  if (spec.kind === 'json') invalid('not filterable')
  const tests = ops.map(([op, v]): ((row: Row) => boolean) => {
    if (!['$eq', '$in', '$nin', '$ne', '$exists', '$lt', '$lte', '$gt', '$gte'].includes(op)) invalid('operator')
    const column = (row: Row) => (name === 'to' ? row.recipients : row[spec.column])
    if (op === '$exists') {
      if (v !== 'true' && v !== 'false') invalid('$exists')
      return (row) => (column(row) !== null) === (v === 'true')
    }
    const values = op === '$in' || op === '$nin' ? list(v).map((x) => convert(spec, x)) : [convert(spec, v)]
    if (spec.kind === 'array') {
      if (op.startsWith('$l') || op.startsWith('$g')) invalid('comparison on a list')
      const positive = (row: Row) => {
        const has = arrayOf(row, name, spec)
        return values.some((x) => (x === null ? column(row) === null : (has ?? []).includes(String(x))))
      }
      return op === '$ne' || op === '$nin' ? (row) => !positive(row) : positive
    }
    const x = values[0] ?? null
    if (op === '$eq') return (row) => (x === null ? column(row) === null : column(row) === x)
    if (op === '$ne') return (row) => column(row) !== x
    if (op === '$in') return (row) => values.some((y) => (y === null ? column(row) === null : column(row) === y))
    if (op === '$nin') {
      const hasNull = values.includes(null)
      return (row) => (hasNull ? column(row) !== null : true) && !values.some((y) => y !== null && column(row) === y)
    }
    if (x === null) invalid('compare with null')
    const sign =
      { $lt: (c: number) => c < 0, $lte: (c: number) => c <= 0, $gt: (c: number) => c > 0 }[op] ?? ((c) => c >= 0)
    return (row) => column(row) !== null && sign(compare(column(row), x))
  })
  return (row) => tests.every((test) => test(row))
}

function filterTest(
  query: Record<string, unknown>,
  fields: Record<string, Spec>,
  depth: number,
): (row: Row) => boolean {
  if (depth > 4) invalid('too deep')
  const tests: ((row: Row) => boolean)[] = []
  for (const [key, value] of Object.entries(query)) {
    if (['$limit', '$skip', '$sort', '$select'].includes(key)) {
      if (depth > 0) invalid('paging below the top')
      continue
    }
    if (key === '$or' || key === '$and') {
      const branches = list(value).map((b) => (isObject(b) ? filterTest(b, fields, depth + 1) : invalid('branch')))
      if (branches.length === 0 || branches.length > 100) invalid('branches')
      tests.push(key === '$or' ? (r) => branches.some((b) => b(r)) : (r) => branches.every((b) => b(r)))
      continue
    }
    const spec = Object.hasOwn(fields, key) ? fields[key] : undefined
    if (!spec) return invalid('unknown field')
    tests.push(fieldTest(key, spec, value))
  }
  return (row) => tests.every((test) => test(row))
}

function count(name: string, raw: unknown, fallback: number): number {
  if (raw === undefined) return fallback
  return typeof raw === 'string' && /^\d+$/.test(raw) ? Math.min(Number(raw), 1e15) : invalid(name)
}

/** The record as the API shows it: NULL columns left out, JSON columns parsed. */
function shape(row: Row, fields: Record<string, Spec>, who: Who): Row {
  const out: Row = {}
  for (const [name, spec] of Object.entries(fields)) {
    if (name === 'to') continue
    const value = name === 'seenBy' ? row.$knownMarks : row[spec.column]
    if (name === 'seenBy') {
      out.seenBy = JSON.parse(row.seen_by as string).filter((a: string) => (value as string[]).includes(a))
    } else if (value !== null)
      out[name] = spec.kind === 'json' || spec.kind === 'array' ? JSON.parse(value as string) : value
  }
  if (who.role === 'admin' && row.recipients !== undefined && row.recipients !== null)
    out.to = JSON.parse(row.recipients as string)
  return out
}

/** What GET /<table> answers for `query`, or 'invalid' when the rules refuse it (a 400). */
export function expectedList(
  db: Database,
  table: string,
  who: Who,
  query: Record<string, unknown>,
): Expected | 'invalid' {
  const base = REFERENCE_FIELDS[table] as Record<string, Spec>
  const fields =
    table === 'notifications' && who.role === 'admin'
      ? { ...base, to: { column: 'recipients', kind: 'array' as const } }
      : base
  try {
    // $unseen is the notifications' own extension; anywhere else it is an unknown operator.
    const { $unseen, ...others } = query
    const rest = table === 'notifications' ? others : query
    if ($unseen !== undefined && $unseen !== 'true' && $unseen !== 'false') invalid('$unseen')
    const limit = Math.min(count('$limit', rest.$limit, 100), 1000)
    const skip = count('$skip', rest.$skip, 0)
    const keep = filterTest(rest, fields, 0)
    const sort: [string, number][] = []
    if (rest.$sort !== undefined) {
      if (!isObject(rest.$sort)) invalid('$sort')
      for (const [name, dir] of Object.entries(rest.$sort as Row)) {
        const spec = Object.hasOwn(fields, name) ? fields[name] : undefined
        if (!spec || spec.kind === 'array' || spec.kind === 'json' || (dir !== '1' && dir !== '-1')) invalid('$sort')
        sort.push([(spec as Spec).column, Number(dir)])
      }
      if (!Object.hasOwn(rest.$sort as Row, 'id')) sort.push(['id', 1])
    } else sort.push(['created_at', 1], ['id', 1])
    let select: string[] | null = null
    if (rest.$select !== undefined) {
      const names = list(rest.$select)
      for (const name of names) if (typeof name !== 'string' || !Object.hasOwn(fields, name)) invalid('$select')
      select = [...new Set(['id', ...(names as string[])])]
    }
    const matching = visibleRows(db, table, who)
      .filter(keep)
      .filter(
        (r) =>
          table !== 'notifications' ||
          $unseen === undefined ||
          (r.$allMarks as string[]).includes(who.account) === ($unseen === 'false'),
      )
      .sort((a, b) => {
        for (const [column, dir] of sort) {
          const c = compare(a[column], b[column])
          if (c !== 0) return c * dir
        }
        return 0
      })
    const page = limit === 0 ? [] : matching.slice(skip, skip + limit)
    const records = page.map((r) => {
      const full = shape(r, fields, who)
      return select ? Object.fromEntries(Object.entries(full).filter(([k]) => select.includes(k))) : full
    })
    return { ids: page.map((r) => r.id as string), total: matching.length, limit, skip, records }
  } catch (error) {
    if (error instanceof Invalid) return 'invalid'
    throw error
  }
}
