import createError from '@fastify/error'

/**
 * The list query engine: turns a Feathers-style query (as parsed by qs) into a parameterized
 * SQL condition over one resource's known fields. Field names never reach the SQL text unless
 * they are in the resource's field map; values always travel as parameters.
 */

export const InvalidQueryError = createError('INVALID_QUERY', '%s', 400)

export type FieldType = 'string' | 'number' | 'boolean'

/** A multi-valued field kept in a side table (key column -> record id, value column -> value). */
export interface ArrayField {
  table: string
  key: string
  value: string
  /** Only these side-table rows count (e.g. the marks a viewer may learn of); its own parameters. */
  scope?: Condition
}

export interface FieldSpec {
  column: string
  type: FieldType
  array?: ArrayField
  /** A stored JSON document (items, meta): it can be selected, not filtered or sorted on. */
  selectOnly?: boolean
}

export type FieldMap = Readonly<Record<string, FieldSpec>>

export interface Condition {
  sql: string
  params: unknown[]
}

export interface ListQuery {
  filter: Condition
  orderBy: string
  limit: number
  skip: number
  select: string[] | null
}

export interface QueryLimits {
  defaultLimit: number
  maxLimit: number
}

export const LIST_LIMITS: QueryLimits = { defaultLimit: 100, maxLimit: 1000 }

const PAGING_KEYS = new Set(['$limit', '$skip', '$sort', '$select'])
const COMPARISONS: Record<string, string> = { $lt: '<', $lte: '<=', $gt: '>', $gte: '>=' }
const LIST_OPERATORS = ['$in', '$nin', '$ne', '$exists'] as const
const SCALAR_OPERATORS = [...LIST_OPERATORS, ...Object.keys(COMPARISONS)] as const

/**
 * The operators a field takes besides plain equality: the engine refuses the others, and the
 * OpenAPI document (plugins/list-parameters.ts) lists exactly these.
 */
export function operatorsOf(spec: FieldSpec): readonly string[] {
  if (spec.selectOnly) return []
  return spec.array ? LIST_OPERATORS : SCALAR_OPERATORS
}
/** Entries of one $or / $and: SQLite refuses expressions nested deeper than 1000 (a 500). */
export const MAX_BRANCHES = 100

function fail(message: string): never {
  throw new InvalidQueryError(message)
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** qs turns long or sparse arrays into objects with numeric keys; both forms are lists here. */
function asList(value: unknown, what: string): unknown[] {
  if (Array.isArray(value)) return value
  if (typeof value === 'string') return [value]
  if (isPlainObject(value) && Object.keys(value).every((k) => /^\d+$/.test(k))) return Object.values(value)
  return fail(`${what} must be a list`)
}

function convert(name: string, spec: FieldSpec, raw: unknown): string | number | null {
  if (typeof raw !== 'string')
    return fail(`${name} must be a single value, not ${Array.isArray(raw) ? 'a list' : 'an object'}`)
  // `field=` and a bare `field` are how qs (so the Feathers clients) write null. No stored value is
  // the empty string (every string field is non-empty when written), so this takes nothing away.
  if (raw === 'null' || raw === '') return null
  if (spec.type === 'string') return raw
  if (spec.type === 'number') {
    if (!/^-?\d+(\.\d+)?$/.test(raw)) return fail(`${name} must be a number, got '${raw}'`)
    // Hundreds of digits read as Infinity, which is no time and no count (and would bind as null).
    const value = Number(raw)
    if (!Number.isFinite(value)) return fail(`${name} must be a number that fits, got ${raw.length} digits`)
    return value
  }
  if (raw === 'true' || raw === 'false') return raw === 'true' ? 1 : 0
  return fail(`${name} must be true or false, got '${raw}'`)
}

function inList(column: string, values: unknown[], negate: boolean): Condition {
  const present = values.filter((v) => v !== null)
  const hasNull = present.length !== values.length
  const list =
    present.length > 0 ? `${column} ${negate ? 'NOT IN' : 'IN'} (${present.map(() => '?').join(', ')})` : null
  if (!negate) {
    const parts = [list, hasNull ? `${column} IS NULL` : null].filter((p) => p !== null)
    return { sql: parts.length > 0 ? `(${parts.join(' OR ')})` : '0', params: present }
  }
  // Like Feathers and MongoDB, $nin matches a missing value unless null is one of the values.
  if (hasNull) return { sql: list ? `(${column} IS NOT NULL AND ${list})` : `${column} IS NOT NULL`, params: present }
  return { sql: list ? `(${column} IS NULL OR ${list})` : '1', params: present }
}

function scalarCondition(name: string, spec: FieldSpec, op: string, raw: unknown, column: string): Condition {
  if (op === '$exists') {
    if (raw !== 'true' && raw !== 'false') return fail(`${name}[$exists] must be true or false`)
    return { sql: `${column} IS ${raw === 'true' ? 'NOT NULL' : 'NULL'}`, params: [] }
  }
  if (op === '$in' || op === '$nin') {
    const values = asList(raw, `${name}[${op}]`).map((v) => convert(name, spec, v))
    return inList(column, values, op === '$nin')
  }
  const value = convert(name, spec, raw)
  if (op === '$eq')
    return value === null ? { sql: `${column} IS NULL`, params: [] } : { sql: `${column} = ?`, params: [value] }
  if (op === '$ne') return { sql: `${column} IS NOT ?`, params: [value] }
  if (value === null) return fail(`${name}[${op}] cannot compare with null`)
  return { sql: `${column} ${COMPARISONS[op]} ?`, params: [value] }
}

/**
 * Array fields match when they contain the value; the lookup goes through the side table's index.
 * Missing (`null`, `$exists=false`) is the record's own column being NULL: an empty list is present.
 */
function arrayCondition(name: string, spec: FieldSpec, array: ArrayField, op: string, raw: unknown): Condition {
  const owners = (where: string) =>
    `r.id IN (SELECT ${array.key} FROM ${array.table} WHERE ${where}${array.scope ? ` AND ${array.scope.sql}` : ''})`
  const missing = `r.${spec.column} IS NULL`
  if (op === '$exists') {
    if (raw !== 'true' && raw !== 'false') return fail(`${name}[$exists] must be true or false`)
    return { sql: raw === 'true' ? `r.${spec.column} IS NOT NULL` : missing, params: [] }
  }
  const values = (op === '$in' || op === '$nin' ? asList(raw, `${name}[${op}]`) : [raw]).map((v) =>
    convert(name, spec, v),
  )
  const present = values.filter((v) => v !== null)
  const anyNull = present.length !== values.length
  const contains = present.length > 0 ? owners(`${array.value} IN (${present.map(() => '?').join(', ')})`) : '0'
  const params = present.length > 0 ? [...present, ...(array.scope?.params ?? [])] : []
  const positive = anyNull ? `(${contains} OR ${missing})` : contains
  const negate = op === '$ne' || op === '$nin'
  return { sql: negate ? `NOT ${positive}` : positive, params }
}

function fieldCondition(name: string, spec: FieldSpec, raw: unknown): Condition {
  const ops: [string, unknown][] = isPlainObject(raw) ? Object.entries(raw) : [['$eq', raw]]
  if (ops.length === 0) return fail(`${name} needs a value or an operator`)
  if (spec.selectOnly) return fail(`${name} cannot be filtered on`)
  const supported = operatorsOf(spec)
  const parts = ops.map(([op, value]) => {
    if (spec.array && Object.hasOwn(COMPARISONS, op)) return fail(`${name} is a list: ${op} is not supported on it`)
    if (op !== '$eq' && !supported.includes(op)) return fail(`unknown operator '${op}' on ${name}`)
    return spec.array
      ? arrayCondition(name, spec, spec.array, op, value)
      : scalarCondition(name, spec, op, value, `r.${spec.column}`)
  })
  return and(parts)
}

function and(parts: Condition[]): Condition {
  if (parts.length === 0) return { sql: '1', params: [] }
  if (parts.length === 1) return parts[0] as Condition
  return { sql: parts.map((p) => `(${p.sql})`).join(' AND '), params: parts.flatMap((p) => p.params) }
}

function filterCondition(query: Record<string, unknown>, fields: FieldMap, depth: number): Condition {
  if (depth > 4) return fail('$or and $and are nested too deeply')
  const parts: Condition[] = []
  for (const [key, value] of Object.entries(query)) {
    if (PAGING_KEYS.has(key)) {
      if (depth > 0) fail(`${key} is only allowed at the top level`)
      continue
    }
    if (key === '$or' || key === '$and') {
      const entries = asList(value, key)
      if (entries.length > MAX_BRANCHES) fail(`${key} takes at most ${MAX_BRANCHES} entries`)
      const branches = entries.map((branch) => {
        if (!isPlainObject(branch)) return fail(`each ${key} entry must be an object of filters`)
        return filterCondition(branch, fields, depth + 1)
      })
      if (branches.length === 0) fail(`${key} needs at least one entry`)
      const joiner = key === '$or' ? ' OR ' : ' AND '
      parts.push({ sql: branches.map((b) => `(${b.sql})`).join(joiner), params: branches.flatMap((b) => b.params) })
      continue
    }
    if (key.startsWith('$')) fail(`unknown operator '${key}'`)
    const spec = Object.hasOwn(fields, key) ? fields[key] : undefined
    if (!spec) fail(`unknown field '${key}'`)
    parts.push(fieldCondition(key, spec, value))
  }
  return and(parts)
}

/** A count of any size: beyond 10^15 it can only mean "all" or "past the end" (and stays exact in SQL). */
function integerParam(name: string, raw: unknown, fallback: number): number {
  if (raw === undefined) return fallback
  if (typeof raw !== 'string' || !/^\d+$/.test(raw)) return fail(`${name} must be a non-negative integer`)
  return Math.min(Number(raw), 1e15)
}

function sortOrder(raw: unknown, fields: FieldMap): string {
  if (raw === undefined) return 'r.created_at ASC, r.id ASC'
  if (!isPlainObject(raw)) return fail('$sort must look like $sort[field]=1 or $sort[field]=-1')
  const keys: string[] = []
  for (const [name, dir] of Object.entries(raw)) {
    const spec = Object.hasOwn(fields, name) ? fields[name] : undefined
    if (!spec) fail(`cannot sort by unknown field '${name}'`)
    if (spec.array) fail(`cannot sort by the list field '${name}'`)
    if (spec.selectOnly) fail(`cannot sort by '${name}'`)
    if (dir !== '1' && dir !== '-1') fail(`$sort[${name}] must be 1 or -1`)
    keys.push(`r.${spec.column} ${dir === '1' ? 'ASC' : 'DESC'}`)
  }
  if (!Object.hasOwn(raw, 'id')) keys.push('r.id ASC')
  return keys.join(', ')
}

function selection(raw: unknown, fields: FieldMap): string[] | null {
  if (raw === undefined) return null
  const names = asList(raw, '$select')
  for (const name of names) {
    // qs gives objects without a prototype for `$select[0][x]=`: String() of those throws.
    if (typeof name !== 'string') fail('$select entries must be field names, not lists or objects')
    if (!Object.hasOwn(fields, name as string)) fail(`cannot select unknown field '${name}'`)
  }
  return [...new Set(['id', ...(names as string[])])]
}

export function parseListQuery(query: Record<string, unknown>, fields: FieldMap, limits = LIST_LIMITS): ListQuery {
  const requested = integerParam('$limit', query.$limit, limits.defaultLimit)
  return {
    filter: filterCondition(query, fields, 0),
    orderBy: sortOrder(query.$sort, fields),
    limit: Math.min(requested, limits.maxLimit),
    skip: integerParam('$skip', query.$skip, 0),
    select: selection(query.$select, fields),
  }
}
