import assert from 'node:assert/strict'
import { STATUS_CODES } from 'node:http'
import type { Database, Statement } from 'better-sqlite3'
import fc from 'fast-check'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import qs from 'qs'
import type { Test } from 'tap'
import type { Config } from '../../config.js'
import { createNotificationRepository } from '../../db/repositories/notifications.js'
import { FEATHERS_NAME_BY_STATUS } from '../clients/feathers-names.js'
import { bearer, buildTestApp, type TestApp, type TestTokens } from '../helper.js'
import { FUZZ_RUNS } from '../property-runs.js'
import { SEED as NOTIFICATION_SEED } from '../routes/notifications-fixtures.js'

/**
 * Shared pieces of the property-based tests: the database snapshot, the contract checks every
 * response must pass, and arbitraries of junk (values, bodies, ids, query strings, headers).
 */

/** Runs of each fuzz property: FUZZ_RUNS (test/property-runs.ts). */
export const NUM_RUNS = FUZZ_RUNS
/** FUZZ_SEED replays a run reported by a failure (its `seed:`). */
const SEED = process.env.FUZZ_SEED ? { seed: Number(process.env.FUZZ_SEED) } : {}

/**
 * fc.assert with a counterexample report cut short (bodies may be a megabyte long). `examples` run
 * first, every time: inputs a property must see whatever is drawn (a write that succeeds, so the
 * checks of a success run in every run, not in most). They come on top of `numRuns` drawn runs:
 * fast-check counts examples among its runs, and they should not take the place of drawn ones.
 */
export async function check<Ts>(
  property: fc.IAsyncProperty<Ts>,
  numRuns = NUM_RUNS,
  examples: Ts[] = [],
): Promise<void> {
  try {
    await fc.assert(property, { numRuns: numRuns + examples.length, examples, ...SEED })
  } catch (error) {
    if (error instanceof Error && error.message.length > 4000) {
      error.message = `${error.message.slice(0, 4000)} … (${error.message.length} characters)`
    }
    throw error
  }
}

/** Every failed authentication counts per address; the fuzzers send many on purpose. */
export async function buildFuzzApp(t: Test, overrides: Partial<Config> = {}) {
  const built = await buildTestApp(t, { AUTH_FAILURE_LIMIT: 1_000_000, ...overrides })
  const make = (account: string, role: 'read' | 'write' | 'admin', facility: string | null) =>
    built.app.tokens.create({ account, role, facility, label: `fuzz ${account}` }).token
  const tokens: TestTokens & { readB: string; adminB: string } = {
    ...built.tokens,
    readB: make('viewer-b', 'read', 'B'),
    adminB: make('admin-b', 'admin', 'B'),
  }
  return { ...built, tokens }
}

// ---------------------------------------------------------------- database snapshot

/** Every row of every table (SQLite's and Litestream's own aside), in primary-key order, as one text. */
export function snapshot(db: Database): string {
  return snapshotReads(db)
    .map(({ table, rows }) => `${table}\n${rows.get() ?? ''}`)
    .join('\n')
}

type TableRead = { table: string; rows: Statement<[], string | null> }
const tableReads = new WeakMap<Database, { schema: number; reads: TableRead[] }>()

/**
 * One statement per table that gives every value as text (strings as T and the hex of their bytes;
 * quote() for the rest: blobs as X'..', NULL, numbers that read back to the same value), rows in
 * key order, made by SQLite. No value's text holds a comma or a newline, so equal text is equal
 * rows. Prepared once per schema of a connection: a snapshot is taken before and after every
 * request of the isolation tests.
 */
function snapshotReads(db: Database): TableRead[] {
  const schema = db.pragma('schema_version', { simple: true }) as number
  const kept = tableReads.get(db)
  if (kept?.schema === schema) return kept.reads
  const tables = db
    .prepare<[], { name: string }>(
      // Litestream's own tables (_litestream_seq, _litestream_lock) appear when it replicates the file.
      `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
         AND name NOT LIKE '\\_litestream\\_%' ESCAPE '\\' ORDER BY name`,
    )
    .all()
  const reads = tables.map(({ name }) => {
    const table = sqlName(name)
    const columns = db.prepare<[], { name: string; pk: number }>(`PRAGMA table_info(${table})`).all()
    const pk = columns
      .filter((c) => c.pk > 0)
      .sort((a, b) => a.pk - b.pk)
      .map((c) => sqlName(c.name))
    const order = pk.length > 0 ? pk.join(', ') : 'rowid'
    // Text as the hex of its bytes: quote() stops at a NUL character, and a stored string may hold one.
    const value = (column: string) =>
      `CASE typeof(${column}) WHEN 'text' THEN 'T' || hex(${column}) ELSE quote(${column}) END`
    const row = columns.map((c) => value(sqlName(c.name))).join(` || ',' || `)
    const rows = db
      .prepare<[], string | null>(`SELECT string_agg(${row}, char(10) ORDER BY ${order}) FROM ${table}`)
      .pluck()
    return { table, rows }
  })
  tableReads.set(db, { schema, reads })
  return reads
}

const sqlName = (name: string) => `"${name.replaceAll('"', '""')}"`

// ---------------------------------------------------------------- contract checks

const ERROR_KEYS = new Set(['statusCode', 'error', 'message', 'code', 'name'])

/** Never a 5xx, and every error in the contract's shape with statusCode equal to the status. */
export function assertContract(res: LightMyRequestResponse, what: string): void {
  assert.ok(res.statusCode < 500, `${what}: answered ${res.statusCode} ${res.body.slice(0, 300)}`)
  if (res.statusCode < 400) return
  assert.match(String(res.headers['content-type']), /^application\/json/, `${what}: error is JSON`)
  const body = JSON.parse(res.body) as Record<string, unknown>
  assert.ok(typeof body === 'object' && body !== null && !Array.isArray(body), `${what}: error is an object`)
  for (const key of Object.keys(body)) assert.ok(ERROR_KEYS.has(key), `${what}: unexpected error key '${key}'`)
  assert.equal(body.statusCode, res.statusCode, `${what}: statusCode in the body`)
  assert.equal(body.error, STATUS_CODES[res.statusCode], `${what}: error names the status`)
  assert.equal(typeof body.message, 'string', `${what}: message is a string`)
  if ('code' in body) assert.equal(typeof body.code, 'string', `${what}: code is a string`)
  assert.equal(body.name, FEATHERS_NAME_BY_STATUS.get(res.statusCode), `${what}: name is the Feathers class`)
}

/**
 * Sends one request and checks it: the contract, and an unchanged database after every 4xx and
 * every read (`readOnly`). Answers the response for further checks.
 */
export async function send(
  app: TestApp,
  options: InjectOptions,
  readOnly = options.method === undefined || options.method === 'GET',
): Promise<LightMyRequestResponse> {
  const before = snapshot(app.db)
  const res = await app.inject(options)
  const what = `${options.method ?? 'GET'} ${String(options.url).slice(0, 200)}`
  assertContract(res, what)
  if (res.statusCode >= 400 || readOnly) {
    assert.ok(snapshot(app.db) === before, `${what}: answered ${res.statusCode} but the database changed`)
  }
  return res
}

// ---------------------------------------------------------------- authorization

export type TokenName = keyof Awaited<ReturnType<typeof buildFuzzApp>>['tokens']

export const TOKEN_NAMES: TokenName[] = [
  'admin',
  'write',
  'read',
  'writeA',
  'readA',
  'adminA',
  'writeB',
  'readB',
  'adminB',
]

/** Mostly a valid token of any kind; sometimes none, a malformed header or an unknown token. */
export function authorizationArb(tokens: Record<TokenName, string>): fc.Arbitrary<Record<string, string>> {
  return fc.oneof(
    { weight: 12, arbitrary: fc.constantFrom(...TOKEN_NAMES).map((name) => bearer(tokens[name])) },
    // Tokens that may write, once more, so that more requests get past the role check.
    {
      weight: 8,
      arbitrary: fc.constantFrom<TokenName>('admin', 'write', 'writeA', 'writeB').map((n) => bearer(tokens[n])),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom<Record<string, string>>(
        {},
        { authorization: 'Bearer' },
        { authorization: 'Bearer fs_0000000000000000000000000000000000000000' },
        { authorization: `Basic ${Buffer.from('admin:admin').toString('base64')}` },
        { authorization: `Bearer ${tokens.admin} ${tokens.admin}` },
        { authorization: `bearer ${tokens.admin}x` },
      ),
    },
  )
}

/** If-Match variants: mostly none, else plausible or nonsensical versions. */
export const ifMatchArb: fc.Arbitrary<Record<string, string>> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({}) },
  {
    weight: 2,
    arbitrary: fc
      .oneof(
        fc.constantFrom('"1"', '"2"', '"3"', '*', 'W/"1"', '1', '""', '"1", "2"', '"-1"', `"${'9'.repeat(40)}"`),
        fc.string({ maxLength: 30 }).filter((s) => /^[\x20-\x7e]*$/.test(s)),
      )
      .map((value) => ({ 'if-match': value })),
  },
)

// ---------------------------------------------------------------- values

export const SQL_FRAGMENTS = [
  "' OR 1=1 --",
  "x'); DROP TABLE ward_occupants; --",
  '1; DELETE FROM form_templates',
  'r.id',
  ') OR (1=1',
  '" OR ""="',
  '%',
  '_',
  '\\',
  '*/ SELECT * FROM tokens /*',
]

export const PROTO_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf']

let oddStrings: fc.Arbitrary<string> | undefined

/**
 * Strings a client should not send but might: empty, unicode, control characters, lone surrogates.
 * Made on first use, not at import: fast-check maps every code point (1.9 s of CPU) when the first
 * `unit: 'binary'` string of a process is made, and most files that import this module never draw one.
 */
export function oddStringArb(): fc.Arbitrary<string> {
  oddStrings ??= fc.oneof(
    fc.string({ maxLength: 20 }),
    fc.string({ unit: 'binary', maxLength: 20 }),
    fc.string({ unit: fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)), maxLength: 3 }),
    fc.constantFrom('', ' ', '\u0000', '\n', 'null', 'true', '1000', '-1', '1e309', 'NaN', '\u202e', '👩‍⚕️', 'ß'),
    fc.constantFrom(...SQL_FRAGMENTS, ...PROTO_KEYS),
  )
  return oddStrings
}

/** Long strings around the size limits, up to the body limit. */
export function hugeStringArb(bodyLimit: number): fc.Arbitrary<string> {
  return fc
    .constantFrom(200, 201, 500, 501, 1_001, 4_001, 10_001, 65_537, 200_000, 200_001, bodyLimit - 64, bodyLimit + 1)
    .map((n) => 'x'.repeat(Math.max(0, n)))
}

/**
 * Nested arrays or objects, from a little to far more than a stack would take. Serialized by
 * bodyOptions as text (JSON.stringify here would overflow like the service might).
 */
export class Deep {
  constructor(
    readonly depth: number,
    readonly arrays: boolean,
  ) {}
  toJSON(): string {
    return `\u0000deep:${this.depth}:${this.arrays ? 'a' : 'o'}\u0000`
  }
  [fc.toStringMethod](): string {
    return `<${this.arrays ? 'arrays' : 'objects'} nested ${this.depth} deep>`
  }
  text(): string {
    const [open, close] = this.arrays ? ['[', ']'] : ['{"n":', '}']
    return `${open.repeat(this.depth)}"leaf"${close.repeat(this.depth)}`
  }
}

export const deepNestingArb: fc.Arbitrary<Deep> = fc
  .tuple(fc.constantFrom(2, 10, 63, 64, 65, 100, 1_000, 10_000, 100_000), fc.boolean())
  .map(([depth, arrays]) => new Deep(depth, arrays))

/** JSON text of a value that may hold Deep placeholders. */
export function toJsonText(value: unknown): string {
  return JSON.stringify(value).replace(/"\\u0000deep:(\d+):([ao])\\u0000"/g, (_, depth: string, kind: string) =>
    new Deep(Number(depth), kind === 'a').text(),
  )
}

/** Any JSON value, from scalars to nested structures, odd numbers and long strings included. */
export function junkValueArb(bodyLimit: number): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(null, true, false, 0, -0, -1, 1.5, 1e308, -1e308, 2 ** 53, 2 ** 63) },
    { weight: 2, arbitrary: fc.integer() },
    { weight: 1, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) },
    { weight: 3, arbitrary: oddStringArb() },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
    { weight: 1, arbitrary: fc.array(oddStringArb(), { maxLength: 5 }) },
    { weight: 1, arbitrary: hugeStringArb(bodyLimit) },
    { weight: 1, arbitrary: deepNestingArb },
  )
}

/** Keys a client might add: server-owned names, typos, prototype names, unicode, SQL. */
export function extraKeyArb(serverOwned: string[]): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constantFrom(...serverOwned, 'discharge', 'hide', 'version', 'ocupiedBy', 'Bed', 'bed ', '$set', '$or'),
    fc.constantFrom(...PROTO_KEYS, ...SQL_FRAGMENTS),
    fc.string({ maxLength: 12 }),
  )
}

/** Defines a property even when its name is __proto__, so JSON.stringify sends it. */
export function withKey(target: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
  return target
}

type Mutation = (body: Record<string, unknown>) => Record<string, unknown>

/**
 * Valid-looking bodies, often mutated: a key dropped, set to junk (wrong type, null, huge, deep)
 * or added; sometimes replaced by a body that is not an object at all.
 */
export function mutatedBodyArb(
  valid: fc.Arbitrary<Record<string, unknown>>,
  fields: string[],
  serverOwned: string[],
  bodyLimit: number,
): fc.Arbitrary<unknown> {
  const mutation: fc.Arbitrary<Mutation> = fc.oneof(
    fc.constantFrom(...fields).map<Mutation>((key) => (body) => {
      const { [key]: _dropped, ...rest } = body
      return rest
    }),
    fc.tuple(fc.constantFrom(...fields), junkValueArb(bodyLimit)).map<Mutation>(
      ([key, value]) =>
        (body) =>
          withKey({ ...body }, key, value),
    ),
    fc.tuple(extraKeyArb(serverOwned), junkValueArb(bodyLimit)).map<Mutation>(
      ([key, value]) =>
        (body) =>
          withKey({ ...body }, key, value),
    ),
  )
  return fc.oneof(
    { weight: 4, arbitrary: valid },
    {
      weight: 6,
      arbitrary: fc
        .tuple(valid, fc.array(mutation, { minLength: 1, maxLength: 3 }))
        .map(([body, mutations]) => mutations.reduce((b, m) => m(b), body)),
    },
    { weight: 1, arbitrary: junkValueArb(bodyLimit) },
  )
}

export interface RawBody {
  payload: string
  contentType: string | undefined
}

/** Bodies as bytes: malformed JSON, prototype poisoning, other media types, deep nesting. */
export function rawBodyArb(bodyLimit: number): fc.Arbitrary<RawBody> {
  const text = fc.oneof(
    fc.constantFrom(
      '',
      '{',
      '{"bed":',
      '{"bed":"B-1",}',
      "{'bed':'B-1'}",
      '\uFEFF{"type":"x"}',
      '{"__proto__":{"admin":true},"type":"x"}',
      '{"constructor":{"prototype":{"admin":true}},"type":"x"}',
      '{"type":"x","type":1}',
      'null',
      '[]',
      '"text"',
      '1e999',
      '{"type":"x"}{"type":"y"}',
    ),
    fc.string({ maxLength: 40 }),
    // Deeper than JSON.stringify in this process could produce: written out as text.
    fc
      .tuple(
        fc.constantFrom(10_000, 100_000, Math.floor(bodyLimit / 2) - 100),
        fc.constantFrom('%', '{"type":"x","meta":{"a":%}}', '{"type":"x","items":%}', '{"bed":%}', '{"type":%}'),
      )
      .map(([d, frame]) => frame.replace('%', `${'['.repeat(d)}${']'.repeat(d)}`)),
    fc.constantFrom(10_000, 50_000).map((d) => `{"type":"x","config":${'{"a":'.repeat(d)}1${'}'.repeat(d)}}`),
    fc.constant(`{"type":"${'x'.repeat(bodyLimit)}"}`),
  )
  const contentType = fc.constantFrom(
    'application/json',
    'application/json; charset=utf-8',
    'APPLICATION/JSON',
    'application/json; charset=latin1',
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/jsonx',
    undefined,
  )
  return fc.record({ payload: text, contentType })
}

/** Headers and payload for a body that is either a JS value (sent as JSON) or raw bytes. */
export function bodyOptions(body: { json: unknown } | { raw: RawBody }): Pick<InjectOptions, 'payload' | 'headers'> {
  if ('raw' in body) {
    const headers: Record<string, string> = {}
    if (body.raw.contentType !== undefined) headers['content-type'] = body.raw.contentType
    return { payload: body.raw.payload, headers }
  }
  // JSON.stringify turns undefined into nothing: send it as the literal 'null' instead.
  const text = body.json === undefined ? 'null' : toJsonText(body.json)
  return { payload: text, headers: { 'content-type': 'application/json' } }
}

/** Mostly JSON bodies from `json`, sometimes raw ones. */
export function anyBodyArb(json: fc.Arbitrary<unknown>, bodyLimit: number) {
  return fc.oneof(
    { weight: 9, arbitrary: json.map((value) => ({ json: value }) as { json: unknown } | { raw: RawBody }) },
    { weight: 1, arbitrary: rawBodyArb(bodyLimit).map((raw) => ({ raw }) as { json: unknown } | { raw: RawBody }) },
  )
}

// ---------------------------------------------------------------- ids in paths

/** A function that fast-check prints as `label` in a counterexample. */
function labelled<F extends (...args: never[]) => unknown>(fn: F, label: string): F {
  return Object.defineProperty(fn, fc.toStringMethod, { value: () => label })
}

/** The `n`th real id of the pool at send time, as idArb draws them. */
export function poolId(n: number): (pool: string[]) => string {
  return labelled((pool: string[]) => (pool.length > 0 ? (pool[n % pool.length] as string) : 'x'), `pool[${n}]`)
}

/** Real ids (picked at send time from `pool`) or anything else, percent-encoded into the path. */
export function idArb(): fc.Arbitrary<(pool: string[]) => string> {
  const fixed = (s: string) => labelled(() => pct(s), JSON.stringify(pct(s).slice(0, 80)))
  const raw = (s: string) => labelled(() => s, JSON.stringify(s))
  return fc.oneof(
    {
      weight: 5,
      arbitrary: fc.nat().map(poolId),
    },
    { weight: 2, arbitrary: fc.stringMatching(/^[0-9a-f]{24}$/).map(fixed) },
    {
      weight: 2,
      arbitrary: oddStringArb()
        .filter((s) => s.length > 0)
        .map(fixed),
    },
    { weight: 1, arbitrary: fc.constantFrom(64, 65, 100, 101, 5_000).map((n) => fixed('a'.repeat(n))) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(
          '%ZZ',
          '%C0%AF',
          '%00',
          '..%2F..%2Ftokens',
          'x%2Fseen',
          '%E2%80%AE',
          'ABCDEFABCDEFABCDEFABCDEF',
          '%206b026dcd3395a96dc630a816',
        )
        .map(raw),
    },
  )
}

// ---------------------------------------------------------------- query strings

export const OPERATORS = ['$in', '$nin', '$ne', '$lt', '$lte', '$gt', '$gte', '$exists', '$eq']
const FOREIGN_OPERATORS = ['$regex', '$like', '$where', '$populate', '$search', '$set', '$not', '$elemMatch']

/** A qs-style query string over `fields`: mostly plausible Feathers filters, often broken. */
export function queryStringArb(fields: string[], ids: () => string[]): fc.Arbitrary<string> {
  const value = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom('null', 'true', 'false', '0', '1', '-1', '1.5', 'A', 'B', 'C', 'x') },
    {
      weight: 2,
      arbitrary: fc.constantFrom('9'.repeat(20), '9'.repeat(400), '1e309', '0x10', 'Infinity', 'NaN', '00001', ''),
    },
    { weight: 2, arbitrary: fc.constantFrom('ward', 'intake', 'vitals', 'B-1', 'B-2', 'nurse-a', 'admin-1') },
    { weight: 1, arbitrary: fc.nat().map((n) => `@id${n}`) },
    { weight: 2, arbitrary: oddStringArb() },
  )
  const key = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...fields) },
    { weight: 4, arbitrary: fc.constantFrom(...OPERATORS) },
    { weight: 2, arbitrary: fc.constantFrom('$or', '$and', '$sort', '$limit', '$skip', '$select', '$unseen') },
    { weight: 1, arbitrary: fc.constantFrom(...FOREIGN_OPERATORS, ...PROTO_KEYS, 'to', 'seenBy', 'tags') },
    { weight: 1, arbitrary: fc.constantFrom('0', '1', '999', '1001', 'a[b', 'a]', '[]', '[0]', '.', 'a.b') },
    { weight: 1, arbitrary: oddStringArb() },
  )
  type Node = string | Node[] | { [k: string]: Node }
  const { node } = fc.letrec<{ node: Node; obj: Node }>((tie) => ({
    node: fc.oneof(
      { depthSize: 'small', maxDepth: 4, withCrossShrink: true },
      { weight: 6, arbitrary: value },
      { weight: 1, arbitrary: fc.array(tie('node'), { maxLength: 4 }) },
      { weight: 3, arbitrary: tie('obj') },
    ),
    obj: fc
      .array(fc.tuple(key, tie('node')), { maxLength: 4 })
      .map((entries) => entries.reduce((o, [k, v]) => withKey(o, k, v), {} as Record<string, unknown>) as Node),
  }))
  const top = fc.array(fc.tuple(key, node), { maxLength: 6 })
  const encoded = fc
    .tuple(
      top,
      fc.constantFrom<'indices' | 'brackets' | 'repeat'>('indices', 'brackets', 'repeat'),
      fc.boolean(),
      fc.boolean(),
    )
    .map(([entries, arrayFormat, encode, encodeValuesOnly]) => {
      const resolve = (n: unknown): unknown => {
        if (typeof n === 'string') {
          if (!n.startsWith('@id')) return n
          const pool = ids()
          return pool.length > 0 ? pool[Number(n.slice(3)) % pool.length] : 'x'
        }
        if (Array.isArray(n)) return n.map(resolve)
        const out: Record<string, unknown> = {}
        for (const [k, v] of Object.entries(n as object)) withKey(out, k, resolve(v))
        return out
      }
      const obj: Record<string, unknown> = {}
      for (const [k, v] of entries) withKey(obj, k, resolve(v))
      const text = qs.stringify(obj, { arrayFormat, encode, encodeValuesOnly, allowEmptyArrays: false })
      return encode ? text : encodeLoosely(text)
    })
  const raw = fc
    .array(
      fc.oneof(
        fc.constantFrom(
          '$or[0][$or][0][$or][0][$or][0][id]=x',
          '$limit=1000000000000',
          '$limit=-1',
          '$skip=999999999',
          '$sort[createdAt]=2',
          '$sort=createdAt',
          '$select=id',
          'a[999999]=x',
          '__proto__[polluted]=1',
          'constructor[prototype][polluted]=1',
          '%ZZ=1',
          '&&&',
          '=',
          '[]=1',
          'id[$in]=',
          'createdAt[$gt][$lt]=1',
        ),
        fc.constantFrom(1_000, 1_500).map((n) => Array.from({ length: n }, (_, i) => `$or[${i}][id]=x`).join('&')),
        fc.constantFrom(1_000, 1_500).map((n) => Array.from({ length: n }, (_, i) => `id[$in][]=x${i}`).join('&')),
      ),
      { minLength: 1, maxLength: 3 },
    )
    .map((parts) => parts.join('&'))
  return fc.oneof({ weight: 8, arbitrary: encoded }, { weight: 1, arbitrary: raw })
}

/** Percent-encodes UTF-8 bytes (lone surrogates become U+FFFD), everything but unreserved characters. */
export function pct(text: string): string {
  return text.replace(/[^A-Za-z0-9\-_.~]/gu, (c) =>
    [...Buffer.from(c, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
  )
}

/** Unencoded qs output, made safe enough for a URL: only what a URL cannot carry is escaped ('%' stays). */
function encodeLoosely(text: string): string {
  return text.replace(/[^\x21-\x7e]|#/gu, pct)
}

// ---------------------------------------------------------------- who the tokens are, and data to find

/** The account and facility behind each token of buildFuzzApp. */
export const PRINCIPALS: Record<TokenName, { account: string; facility: string | null; role: string }> = {
  admin: { account: 'admin-1', facility: null, role: 'admin' },
  write: { account: 'nurse-all', facility: null, role: 'write' },
  read: { account: 'viewer-all', facility: null, role: 'read' },
  writeA: { account: 'nurse-a', facility: 'A', role: 'write' },
  readA: { account: 'viewer-a', facility: 'A', role: 'read' },
  adminA: { account: 'admin-a', facility: 'A', role: 'admin' },
  writeB: { account: 'nurse-b', facility: 'B', role: 'write' },
  readB: { account: 'viewer-b', facility: 'B', role: 'read' },
  adminB: { account: 'admin-b', facility: 'B', role: 'admin' },
}

/** Records of every resource in facilities A, B and none, so that lists have something to filter. */
export async function seedRecords(app: TestApp, tokens: Record<TokenName, string>): Promise<void> {
  const post = async (url: string, token: string, payload: object) => {
    const res = await app.inject({ method: 'POST', url, headers: bearer(token), payload })
    assert.equal(res.statusCode, 200, `seeding ${url}: ${res.body}`)
    return res.json() as { id: string }
  }
  const writers: [string, string | undefined][] = [
    [tokens.writeA, undefined],
    [tokens.writeB, undefined],
    [tokens.write, undefined],
    [tokens.write, 'C'],
  ]
  for (const [i, [token, facility]] of writers.entries()) {
    for (const bed of ['B-1', 'B-2']) {
      const occupant = await post('/ward-occupants', token, {
        encounter: `enc-${i}`,
        bed,
        occupiedBy: `patient-${i}`,
        room: 'R-1',
        createdAt: 1000 * i,
        ...(facility ? { facility } : {}),
      })
      if (bed === 'B-2') {
        await app.inject({
          method: 'PATCH',
          url: `/ward-occupants/${occupant.id}`,
          headers: bearer(token),
          payload: { discharge: true, provider: 'dr-1' },
        })
      }
    }
    await post('/form-templates', token, {
      type: 'intake',
      name: `form ${i}`,
      tags: ['vitals', `t${i}`],
      items: [{ type: 'date' }],
      meta: { i },
      ...(facility ? { facility } : {}),
    })
    await post('/form-templates', token, {
      type: 'discharge',
      subtype: 'adult',
      createdAt: 5,
      ...(facility ? { facility } : {}),
    })
  }
  const notifications = Object.values(NOTIFICATION_SEED).map((input) =>
    createNotificationRepository(app.db).create(input),
  )
  // Marks of readers in several facilities, so that who may learn of which reader matters.
  for (const [i, { id }] of notifications.entries()) {
    for (const name of (['readA', 'write', 'writeB', 'admin'] as const).filter((_, j) => (i + j) % 2 === 0)) {
      await app.inject({ method: 'POST', url: `/notifications/${id}/seen`, headers: bearer(tokens[name]) })
    }
  }
}
