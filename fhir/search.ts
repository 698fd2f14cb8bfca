import { FhirError } from './outcome.js'

/**
 * Search parameters as FHIR clients send them (http://hl7.org/fhir/R4/search.html). Pure.
 * Each search route declares the parameters it supports once (`SearchParam[]`): its handler reads
 * them, `Prefer: handling=strict` refuses the others, and the CapabilityStatement lists them.
 */
export type SearchParamType = 'token' | 'string' | 'reference' | 'date' | 'uri' | 'number' | 'quantity'

export interface SearchParam {
  name: string
  type: SearchParamType
  /** The modifiers accepted after a colon (`subject:identifier`). */
  modifiers?: readonly string[]
  documentation: string
}

/** What a search route declares: read by the CapabilityStatement (fhir/routes/metadata.ts). */
export interface SearchDeclaration {
  params: readonly SearchParam[]
  include?: readonly string[]
  revinclude?: readonly string[]
  /** The values `_sort` takes (each also with a leading `-`). */
  sort?: readonly string[]
}

/** Parameters of every search, not searches themselves. */
export const RESULT_PARAMS = ['_count', '_summary', '_sort', '_include', '_revinclude', '_format', '_cursor'] as const

/** The query as lists of values per name (`date=ge…&date=le…` is two values). */
export type SearchQuery = Record<string, string[]>

export function searchQuery(raw: unknown): SearchQuery {
  const out: SearchQuery = {}
  for (const [name, value] of Object.entries((raw ?? {}) as Record<string, unknown>)) {
    const values = (Array.isArray(value) ? value : [value]).filter((v): v is string => typeof v === 'string')
    if (values.length !== (Array.isArray(value) ? value.length : 1))
      throw new FhirError(400, 'invalid', `search parameter ${name} must be plain text (no brackets)`, [name])
    out[name] = values
  }
  return out
}

/**
 * The query with the parameters this search does not know left out, or, with
 * `Prefer: handling=strict`, a 400 naming them (http://hl7.org/fhir/R4/search.html#errors).
 */
export function knownParams(query: SearchQuery, declaration: SearchDeclaration, strict: boolean): SearchQuery {
  const known: SearchQuery = {}
  const unknown: string[] = []
  for (const [key, values] of Object.entries(query)) {
    const [name, modifier] = key.split(':', 2) as [string, string | undefined]
    const param = declaration.params.find((p) => p.name === name)
    const ok =
      (RESULT_PARAMS as readonly string[]).includes(key) ||
      (param !== undefined && (modifier === undefined || (param.modifiers ?? []).includes(modifier)))
    if (ok) known[key] = values
    else unknown.push(key)
  }
  if (strict && unknown.length > 0)
    throw new FhirError(400, 'not-supported', `unknown or unsupported search parameter: ${unknown.join(', ')}`, unknown)
  // Always checked here, whatever the route goes on to read: a date is refused even when no
  // candidate is left to compare it with, and a search without includes or a sort refuses them
  // rather than answer as if they had been done.
  for (const param of declaration.params)
    if (param.type === 'date') for (const value of known[param.name] ?? []) parseDate(param.name, value)
  includesOf(known, '_include', declaration.include ?? [])
  includesOf(known, '_revinclude', declaration.revinclude ?? [])
  sortOf(known, declaration.sort ?? [])
  return known
}

export function isStrict(prefer: string | string[] | undefined): boolean {
  const text = Array.isArray(prefer) ? prefer.join(',') : (prefer ?? '')
  return /(^|[,;\s])handling\s*=\s*"?strict"?/i.test(text)
}

/** One value of a parameter that takes a single one (a repeat is a 400). */
export function single(query: SearchQuery, name: string): string | undefined {
  const values = query[name]
  if (values === undefined) return undefined
  if (values.length > 1) throw new FhirError(400, 'invalid', `${name} may be given once`, [name])
  return values[0]
}

/** The OR-ed values of each repeat of a parameter (`status=a,b&status=c`: [[a, b], [c]]): every repeat must match. */
export function orLists(query: SearchQuery, name: string): string[][] {
  return (query[name] ?? []).map((value) => splitOr(value))
}

/** Splits on commas not escaped with `\` (search.html#escaping). */
function splitOr(value: string): string[] {
  const parts: string[] = []
  let current = ''
  for (let i = 0; i < value.length; i++) {
    const char = value[i] as string
    if (char === '\\' && i + 1 < value.length) {
      current += value[++i]
      continue
    }
    if (char === ',') {
      parts.push(current)
      current = ''
    } else current += char
  }
  parts.push(current)
  return parts
}

export interface Token {
  /** undefined: any system; '': no system (`|value`). */
  system: string | undefined
  code: string
}

export function parseToken(value: string): Token {
  const bar = value.indexOf('|')
  if (bar === -1) return { system: undefined, code: value }
  return { system: value.slice(0, bar), code: value.slice(bar + 1) }
}

export function tokenMatches(token: Token, system: string | undefined, code: string): boolean {
  if (token.system !== undefined && token.system !== (system ?? '')) return false
  return token.code === '' ? token.system !== undefined : token.code === code
}

/** `name`-style string search: case- and accent-insensitive, starts with (or `:exact`, `:contains`). */
export function stringMatches(search: string, modifier: string | undefined, value: string): boolean {
  if (modifier === 'exact') return value === search
  const fold = (text: string) => text.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase()
  return modifier === 'contains' ? fold(value).includes(fold(search)) : fold(value).startsWith(fold(search))
}

export type DatePrefix = 'eq' | 'ne' | 'gt' | 'lt' | 'ge' | 'le' | 'sa' | 'eb'

export interface DateRange {
  prefix: DatePrefix
  /** The value's range [low, high) in ms: its precision (a day is the whole day). */
  low: number
  high: number
}

const DATE = /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?)?)?$/

/**
 * A date search value (`ge2024-05-01`, `2024-05`, `lt2024-05-01T10:00:00Z`). A value without a
 * time zone is read as UTC.
 */
export function parseDate(name: string, value: string): DateRange {
  const prefixed = /^(eq|ne|gt|lt|ge|le|sa|eb)/.exec(value)
  const prefix = (prefixed?.[1] ?? 'eq') as DatePrefix
  const text = prefixed ? value.slice(2) : value
  const m = DATE.exec(text)
  const bad = () => new FhirError(400, 'invalid', `${name}: '${value}' is not a FHIR date (e.g. ge2024-05-01)`, [name])
  if (!m) throw bad()
  const [, y, mo, d, h, mi, s, frac, zone] = m
  const zoneMs = zone === undefined || zone === 'Z' ? 0 : zoneOffset(zone)
  const fields = [Number(y), Number(mo ?? 1) - 1, Number(d ?? 1), Number(h ?? 0), Number(mi ?? 0), Number(s ?? 0)]
  const start = new Date(0)
  start.setUTCFullYear(fields[0] as number, fields[1] as number, fields[2] as number)
  start.setUTCHours(fields[3] as number, fields[4] as number, fields[5] as number)
  // Date rolls an impossible field over (2024-02-30 is March 1st, 0024 is 1924 for Date.UTC): a
  // value that does not come back as written is no date at all, not another one.
  if (!sameFields(start, fields) || zoneMs === null) throw bad()
  const low = start.getTime() + Math.round(Number(frac ?? 0) * 1000) - zoneMs
  if (Number.isNaN(low)) throw bad()
  const next = new Date(low + zoneMs)
  if (mo === undefined) next.setUTCFullYear(next.getUTCFullYear() + 1)
  else if (d === undefined) next.setUTCMonth(next.getUTCMonth() + 1)
  else if (h === undefined) next.setUTCDate(next.getUTCDate() + 1)
  else if (s === undefined) next.setUTCMinutes(next.getUTCMinutes() + 1)
  else if (frac === undefined) next.setUTCSeconds(next.getUTCSeconds() + 1)
  else next.setUTCMilliseconds(next.getUTCMilliseconds() + 1)
  return { prefix, low, high: next.getTime() - zoneMs }
}

function sameFields(date: Date, fields: readonly number[]): boolean {
  const read = [
    date.getUTCFullYear(),
    date.getUTCMonth(),
    date.getUTCDate(),
    date.getUTCHours(),
    date.getUTCMinutes(),
    date.getUTCSeconds(),
  ]
  return read.every((value, i) => value === fields[i])
}

/** A zone's offset in ms, or null: not one a clock uses (hours up to 14, minutes under 60). */
function zoneOffset(zone: string): number | null {
  const sign = zone.startsWith('-') ? -1 : 1
  const [hours, minutes] = zone.slice(1).split(':').map(Number) as [number, number]
  if (hours > 14 || minutes > 59) return null
  return sign * (hours * 60 + minutes) * 60_000
}

/**
 * Whether a period [start, end) (end null: ongoing) matches a date value, as search.html#date
 * says for ranges: eq the value contains the period, gt/ge the period goes on after/into the value,
 * lt/le it began before/within it, sa starts after, eb ends before, ne not eq.
 */
export function periodMatches(range: DateRange, start: number, end: number | null): boolean {
  const stop = end ?? Number.POSITIVE_INFINITY
  switch (range.prefix) {
    case 'eq':
      return start >= range.low && stop <= range.high
    case 'ne':
      return !(start >= range.low && stop <= range.high)
    case 'gt':
      return stop > range.high
    case 'ge':
      return stop > range.low
    case 'lt':
      return start < range.low
    case 'le':
      return start < range.high
    case 'sa':
      return start >= range.high
    case 'eb':
      return stop <= range.low
  }
}

/** `_count`: the page size asked for, within the limits. */
export function pageSize(query: SearchQuery, fallback: number, max: number): number {
  const text = single(query, '_count')
  if (text === undefined) return fallback
  if (!/^\d{1,6}$/.test(text))
    throw new FhirError(400, 'invalid', `_count must be a whole number, not '${text}'`, ['_count'])
  return Math.min(Number(text), max)
}

/** `_summary=count`: only the total. Other summaries are not supported (400). */
export function summaryCount(query: SearchQuery): boolean {
  const summary = single(query, '_summary')
  if (summary === undefined || summary === 'false') return false
  if (summary === 'count') return true
  throw new FhirError(400, 'not-supported', `_summary=${summary} is not supported (only count)`, ['_summary'])
}

/** `_sort`: one of the declared keys, `-` for descending; undefined when not given. */
export function sortOf(
  query: SearchQuery,
  allowed: readonly string[],
): { key: string; descending: boolean } | undefined {
  const text = single(query, '_sort')
  if (text === undefined) return undefined
  const descending = text.startsWith('-')
  const key = descending ? text.slice(1) : text
  if (!allowed.includes(key))
    throw new FhirError(
      400,
      'not-supported',
      allowed.length === 0
        ? `_sort is not supported on this search (its matches are in id order)`
        : `_sort=${text} is not supported; sort by ${allowed.join(', ')} (- for descending)`,
      ['_sort'],
    )
  return { key, descending }
}

/** `_include`/`_revinclude`: each must be one declared (an unknown one is a 400, never ignored). */
export function includesOf(
  query: SearchQuery,
  name: '_include' | '_revinclude',
  allowed: readonly string[],
): Set<string> {
  const asked = (query[name] ?? []).flatMap((value) => value.split(','))
  for (const value of asked)
    if (!allowed.includes(value))
      throw new FhirError(
        400,
        'not-supported',
        `${name}=${value} is not supported${allowed.length > 0 ? `; supported: ${allowed.join(', ')}` : ''}`,
        [name],
      )
  return new Set(asked)
}

/** The ISO instant of a time in ms. */
export function instant(ms: number): string {
  return new Date(ms).toISOString()
}
