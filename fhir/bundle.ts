import { createHash } from 'node:crypto'
import { FhirError } from './outcome.js'

/** A FHIR resource as the endpoint answers it. */
export interface Resource {
  resourceType: string
  id: string
  meta?: { versionId?: string; lastUpdated?: string }
  [field: string]: unknown
}

export interface Entry {
  resource: Resource
  mode: 'match' | 'include'
}

export interface SearchsetOptions {
  /** The endpoint's base URL (…/fhir): each entry's fullUrl is base/type/id. */
  base: string
  entries: readonly Entry[]
  /** The matches of the whole search, on every page (includes are not counted). */
  total: number
  selfUrl: string
  nextUrl?: string
}

// The JSON text of each resource, made once: the resources are remembered with the ward (fhir/views.ts),
// so a page of them is put together from text already written.
const texts = new WeakMap<Resource, string>()

export function resourceJson(resource: Resource): string {
  let text = texts.get(resource)
  if (text === undefined) {
    text = JSON.stringify(resource)
    texts.set(resource, text)
  }
  return text
}

/** A searchset Bundle (http://hl7.org/fhir/R4/bundle.html) as JSON text: matches first, then what they include. */
export function searchsetJson(options: SearchsetOptions): string {
  const link = [{ relation: 'self', url: options.selfUrl }]
  if (options.nextUrl !== undefined) link.push({ relation: 'next', url: options.nextUrl })
  const head = JSON.stringify({ resourceType: 'Bundle', type: 'searchset', total: options.total, link })
  if (options.entries.length === 0) return head
  const entries = options.entries.map(
    ({ resource, mode }) =>
      `{"fullUrl":${JSON.stringify(`${options.base}/${resource.resourceType}/${resource.id}`)},"resource":${resourceJson(resource)},"search":{"mode":"${mode}"}}`,
  )
  return `${head.slice(0, -1)},"entry":[${entries.join(',')}]}`
}

/**
 * The paging cursor of a next link: where the last page ended (the sort key and id of its last
 * match: a keyset, so records added, changed or gone meanwhile move no other record between
 * pages), and a fingerprint of the search it belongs to. It is checked, not secret: a cursor
 * changed by hand or used with another search is refused; a token only ever pages through what its
 * own facility may see, whatever the cursor says, since each page applies the facility again.
 */
export type Keyset = readonly (string | number | null)[]

function digest(text: string, length: number): string {
  return createHash('sha256').update(text, 'utf8').digest('base64url').slice(0, length)
}

/** What a search is, without its paging: the parameters sorted, the cursor and format left out. */
export function searchFingerprint(resourceType: string, query: Readonly<Record<string, readonly string[]>>): string {
  const parts = Object.keys(query)
    .filter((name) => name !== '_cursor' && name !== '_format')
    .sort()
    .map((name) => `${name}=${[...(query[name] ?? [])].join('\u0001')}`)
  return digest(`${resourceType}?${parts.join('&')}`, 16)
}

export function encodeCursor(fingerprint: string, after: Keyset): string {
  const payload = Buffer.from(JSON.stringify({ f: fingerprint, k: after }), 'utf8').toString('base64url')
  return `${payload}.${digest(payload, 12)}`
}

export function decodeCursor(cursor: string, fingerprint: string): Keyset {
  const refused = () =>
    new FhirError(
      400,
      'invalid',
      'the _cursor is damaged or belongs to another search: start again from the first page',
      ['_cursor'],
    )
  const [payload, check, extra] = cursor.split('.')
  if (payload === undefined || check === undefined || extra !== undefined || digest(payload, 12) !== check)
    throw refused()
  let parsed: { f?: unknown; k?: unknown }
  try {
    parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'))
  } catch {
    throw refused()
  }
  if (parsed.f !== fingerprint || !Array.isArray(parsed.k)) throw refused()
  return parsed.k as Keyset
}

/** Compares two keysets element by element (null first, then numbers, then text). */
export function compareKeys(a: Keyset, b: Keyset): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i] ?? null
    const y = b[i] ?? null
    if (x === y) continue
    if (x === null) return -1
    if (y === null) return 1
    if (typeof x !== typeof y) return typeof x === 'number' ? -1 : 1
    return x < y ? -1 : 1
  }
  return 0
}

export interface Page<T> {
  matches: T[]
  total: number
  /** The keyset of the last match, when more follow. */
  next?: Keyset
}

/**
 * One page of sorted candidates after a keyset: `keyOf` gives each its full sort key, ending in its
 * id, so no two compare equal and a page boundary is exact.
 */
export function pageAfter<T>(
  sorted: readonly T[],
  keyOf: (item: T) => Keyset,
  after: Keyset | null,
  count: number,
): Page<T> {
  const start = after === null ? 0 : firstAfter(sorted, keyOf, after)
  const matches = sorted.slice(start, start + count)
  const last = matches.at(-1)
  const more = start + count < sorted.length
  return { matches, total: sorted.length, ...(more && last !== undefined ? { next: keyOf(last) } : {}) }
}

function firstAfter<T>(sorted: readonly T[], keyOf: (item: T) => Keyset, after: Keyset): number {
  let low = 0
  let high = sorted.length
  while (low < high) {
    const mid = (low + high) >>> 1
    if (compareKeys(keyOf(sorted[mid] as T), after) <= 0) low = mid + 1
    else high = mid
  }
  return low
}
