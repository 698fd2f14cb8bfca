import assert from 'node:assert/strict'
import type { Database } from 'better-sqlite3'
import type { LightMyRequestResponse } from 'fastify'
import { PRINCIPALS, type TokenName } from './fuzz-helper.js'

/**
 * What a successful fuzzed write must have stored, read back with plain SQL and compared with the
 * body that was sent (parsed from the bytes on the wire), never with the service's own answer.
 */

type Row = Record<string, unknown>
type Who = (typeof PRINCIPALS)[TokenName]

/** The principal behind an Authorization header of authorizationArb (only valid tokens get a 200). */
export function principalOf(tokens: Record<TokenName, string>, headers: Record<string, string>): Who {
  const name = (Object.keys(tokens) as TokenName[]).find((n) => headers.authorization === `Bearer ${tokens[n]}`)
  assert.ok(name, 'a write succeeded without a known token')
  return PRINCIPALS[name]
}

/** The row of an id as it appears in a path (percent-encoded; undecodable text stays as it is). */
export function rowOf(db: Database, table: string, id: string): Row | undefined {
  let plain = id
  try {
    plain = decodeURIComponent(id)
  } catch {}
  return db.prepare(`SELECT * FROM ${table} WHERE id = ?`).get(plain) as Row | undefined
}

/** The JSON object a request carried, as the bytes say (raw bodies included). */
export function sentObject(payload: unknown): Row {
  // A leading byte order mark is ignored, as RFC 8259 (section 8.1) lets a parser do and the
  // service's parser (secure-json-parse) does; JSON.parse would refuse it.
  const value = JSON.parse(String(payload).replace(/^\uFEFF/, '')) as unknown
  assert.ok(typeof value === 'object' && value !== null && !Array.isArray(value), 'a 200 for a body that is no object')
  return value as Row
}

const json = (text: unknown) => (text === null ? null : JSON.parse(text as string))

function between(value: unknown, from: number, to: number, what: string) {
  assert.ok(typeof value === 'number' && value >= from && value <= to, `${what} ${value} is the time of the write`)
}

const OCCUPANT_COLUMNS: Record<string, string> = {
  encounter: 'encounter',
  bed: 'bed',
  occupiedBy: 'occupied_by',
  room: 'room',
  provider: 'provider',
}

export function assertOccupantCreated(db: Database, res: LightMyRequestResponse, body: Row, who: Who, t0: number) {
  const row = rowOf(db, 'ward_occupants', (res.json() as { id: string }).id)
  assert.ok(row, 'the created occupant is stored')
  for (const [field, column] of Object.entries(OCCUPANT_COLUMNS)) {
    assert.equal(row[column], body[field] ?? null, `${field} stored as sent`)
  }
  assert.equal(row.facility, body.facility ?? who.facility, 'facility: the one sent, else the token’s')
  assert.equal(row.created_by, who.account, 'createdBy is the caller')
  if (body.createdAt === undefined) between(row.created_at, t0, Date.now(), 'createdAt')
  else assert.equal(row.created_at, body.createdAt, 'createdAt as sent')
  if (body.occupiedAt === undefined) between(row.occupied_at, t0, Date.now(), 'occupiedAt')
  else assert.equal(row.occupied_at, body.occupiedAt, 'occupiedAt as sent')
  assert.equal(row.discharged_at, null, 'a new occupant is active')
}

export function assertOccupantPatched(db: Database, before: Row, body: Row, who: Who, t0: number) {
  const after = rowOf(db, 'ward_occupants', before.id as string)
  assert.ok(after, 'the patched occupant is still stored')
  const expected: Row = { ...before, version: after.version }
  if ('provider' in body) expected.provider = body.provider
  if (body.discharge === true) {
    assert.equal(before.discharged_at, null, 'discharging a discharged occupant must be a 409')
    between(after.discharged_at, t0, Date.now(), 'dischargedAt')
    Object.assign(expected, { discharged_at: after.discharged_at, discharged_by: who.account })
  }
  if (body.discharge === false) Object.assign(expected, { discharged_at: null, discharged_by: null })
  assert.deepEqual(after, expected, 'the patch applied, nothing else changed')
}

const TEMPLATE_TEXT: Record<string, string> = {
  type: 'type',
  subtype: 'subtype',
  name: 'name',
  description: 'description',
  template: 'template',
}
const TEMPLATE_JSON: Record<string, string> = { tags: 'tags', meta: 'meta', config: 'config' }

/** Items as sent, each given an id when it had none (the stored id must then be a fresh one). */
function assertItems(stored: unknown, sent: unknown) {
  if (sent === undefined || sent === null) return assert.equal(stored, null, 'no items stored')
  const items = stored as Row[]
  assert.equal(items.length, (sent as Row[]).length, 'every item stored')
  for (const [i, item] of (sent as Row[]).entries()) {
    const got = items[i] as Row
    if (item.id === undefined) assert.match(String(got.id), /^[0-9a-f]{24}$/, 'a generated item id')
    assert.deepEqual(got, { ...item, id: item.id ?? got.id }, `item ${i} stored as sent`)
  }
}

export function assertTemplateCreated(db: Database, res: LightMyRequestResponse, body: Row, who: Who, t0: number) {
  const row = rowOf(db, 'form_templates', (res.json() as { id: string }).id)
  assert.ok(row, 'the created template is stored')
  for (const [field, column] of Object.entries(TEMPLATE_TEXT)) assert.equal(row[column], body[field] ?? null, field)
  for (const [field, column] of Object.entries(TEMPLATE_JSON))
    assert.deepEqual(json(row[column]), body[field] ?? null, `${field} stored as sent`)
  assertItems(json(row.items), body.items)
  assert.equal(row.facility, body.facility ?? who.facility, 'facility: the one sent, else the token’s')
  assert.equal(row.created_by, who.account, 'createdBy is the caller')
  if (body.createdAt === undefined) between(row.created_at, t0, Date.now(), 'createdAt')
  else assert.equal(row.created_at, body.createdAt, 'createdAt as sent')
  assert.equal(row.hidden_at, null, 'a new template is not hidden')
}

export function assertTemplatePatched(db: Database, before: Row, body: Row, who: Who, t0: number) {
  const after = rowOf(db, 'form_templates', before.id as string)
  assert.ok(after, 'the patched template is still stored')
  const expected: Row = { ...before, version: after.version, items: after.items }
  for (const [field, column] of Object.entries(TEMPLATE_TEXT)) if (field in body) expected[column] = body[field]
  for (const [field, column] of Object.entries(TEMPLATE_JSON))
    if (field in body) expected[column] = body[field] === null ? null : after[column]
  if ('facility' in body) expected.facility = body.facility
  if ('createdAt' in body) expected.created_at = body.createdAt
  if (body.hide === true && before.hidden_at === null) {
    between(after.hidden_at, t0, Date.now(), 'hiddenAt')
    Object.assign(expected, { hidden_at: after.hidden_at, hidden_by: who.account })
  }
  if (body.hide === false) Object.assign(expected, { hidden_at: null, hidden_by: null })
  assert.deepEqual(after, expected, 'the patch applied, nothing else changed')
  for (const [field, column] of Object.entries(TEMPLATE_JSON))
    if (field in body) assert.deepEqual(json(after[column]), body[field], `${field} replaced by the one sent`)
  if ('items' in body) assertItems(json(after.items), body.items)
  else assert.equal(after.items, before.items, 'items unchanged')
  // A patch that changes nothing (a body of nothing new, hide on a hidden template) makes no
  // version, as for ward occupants (db/repositories/form-templates.ts, patchRow).
  const changed = Object.keys(after).some((column) => column !== 'version' && after[column] !== before[column])
  assert.equal(
    after.version,
    (before.version as number) + (changed ? 1 : 0),
    changed ? 'a new version' : 'no new version',
  )
}

export function assertDeleted(db: Database, table: string, id: string) {
  assert.equal(rowOf(db, table, id), undefined, 'the deleted record is gone')
}
