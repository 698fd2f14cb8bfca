import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { buildApp } from '../../app.js'
import { defaultConfig } from '../../config.js'
import { loadMigrations, migrate } from '../../db/migrations.js'
import { bearer, buildTestApp, type TestApp } from '../helper.js'

interface Occupant {
  id: string
  bed: string
  room?: string
  facility?: string
  occupiedAt: number
  dischargedAt?: number
}
interface Bed {
  bed: string
  room?: string
  active: Occupant[]
  lastDischarged?: Occupant
  state?: string
}

let serial = 0
async function admit(app: TestApp, token: string, bed: string, extra: Record<string, unknown> = {}) {
  serial++
  const payload = {
    encounter: `enc-${serial}`,
    bed,
    occupiedBy: `patient-${serial}`,
    occupiedAt: 1_000 + serial,
    ...extra,
  }
  const res = await app.inject({ method: 'POST', url: '/ward-occupants', headers: bearer(token), payload })
  if (res.statusCode !== 200) throw new Error(res.body)
  return res.json() as Occupant
}
async function patch(app: TestApp, token: string, id: string, payload: object) {
  const res = await app.inject({ method: 'PATCH', url: `/ward-occupants/${id}`, headers: bearer(token), payload })
  if (res.statusCode !== 200) throw new Error(res.body)
  return res.json() as Occupant
}

/**
 * The oracle: the beds worked out from every occupant record in plain SQL-free JavaScript, from
 * what GET /ward-occupants lists (all of them, discharged ones included).
 */
async function expectedBeds(app: TestApp, token: string, facility: string | null) {
  const res = await app.inject({ url: '/ward-occupants?$limit=1000', headers: bearer(token) })
  const all = (res.json().wardOccupants as Occupant[]).filter((o) => (o.facility ?? null) === facility)
  const beds = new Map<string, Bed>()
  for (const o of all) {
    const bed = beds.get(o.bed) ?? { bed: o.bed, active: [] }
    if (o.dischargedAt === undefined) bed.active.push(o)
    else if (!bed.lastDischarged || o.dischargedAt > (bed.lastDischarged.dischargedAt as number)) bed.lastDischarged = o
    beds.set(o.bed, bed)
  }
  for (const bed of beds.values()) {
    bed.active.sort((a, b) => a.occupiedAt - b.occupiedAt)
    const room = bed.active.at(-1)?.room ?? bed.lastDischarged?.room
    if (room !== undefined) bed.room = room
    bed.state = bed.active.length > 0 ? 'occupied' : 'free'
  }
  return [...beds.values()].sort((a, b) => (a.room ?? '').localeCompare(b.room ?? '') || a.bed.localeCompare(b.bed))
}

t.test('GET /beds: every bed the facility ever used, with who is in it and who left it last', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const first = await admit(app, tokens.writeA, 'B-1', { room: 'R-1' })
  await patch(app, tokens.writeA, first.id, { discharge: true })
  await admit(app, tokens.writeA, 'B-1', { room: 'R-1' }) // occupied again
  const twoA = await admit(app, tokens.writeA, 'B-2', { room: 'R-1' })
  await patch(app, tokens.writeA, twoA.id, { discharge: true })
  const twoB = await admit(app, tokens.writeA, 'B-2', { room: 'R-1' })
  await patch(app, tokens.writeA, twoB.id, { discharge: true }) // free: the later discharge is shown
  await admit(app, tokens.writeA, 'A-9') // no room
  await admit(app, tokens.writeA, 'B-3', { room: 'R-0', provider: 'dr-1' })
  await admit(app, tokens.writeB, 'B-1', { room: 'R-7' })
  await admit(app, tokens.write, 'B-8') // a record without a facility

  const res = await app.inject({ url: '/beds', headers: bearer(tokens.readA) })
  t.equal(res.statusCode, 200)
  const body = res.json() as { facility?: string; beds: Bed[]; total: number }
  t.equal(body.facility, 'A', "a bound token's facility")
  t.same(body.beds, await expectedBeds(app, tokens.readA, 'A'), 'as the occupant records say')
  t.strictSame(
    body.beds.map((b) => [b.room, b.bed, b.active.length, b.lastDischarged?.id]),
    [
      [undefined, 'A-9', 1, undefined],
      ['R-0', 'B-3', 1, undefined],
      ['R-1', 'B-1', 1, first.id],
      ['R-1', 'B-2', 0, twoB.id],
    ],
  )
  t.equal(body.total, 4)

  const named = await app.inject({ url: '/beds?facility=A', headers: bearer(tokens.readA) })
  t.same(named.json(), body, 'naming its own facility is the same')
  const other = await app.inject({ url: '/beds?facility=B', headers: bearer(tokens.read) })
  t.same(other.json().beds, await expectedBeds(app, tokens.read, 'B'), 'a token without a facility picks one')
  const none = await app.inject({ url: '/beds', headers: bearer(tokens.read) })
  t.same(none.json(), { beds: await expectedBeds(app, tokens.read, null), total: 1 }, 'or the records without one')
  t.equal((await app.inject({ url: '/beds?facility=nowhere', headers: bearer(tokens.read) })).json().total, 0)
})

t.test('GET /beds follows deletes, re-opened discharges and shared beds', async (t) => {
  const { app, tokens } = await buildTestApp(t, { BED_POLICY: 'shared' })
  const older = await admit(app, tokens.writeA, 'B-1', { room: 'R-1' })
  const newer = await admit(app, tokens.writeA, 'B-1', { room: 'R-1' })
  const left = await admit(app, tokens.writeA, 'B-1', { room: 'R-1' })
  const gone = await admit(app, tokens.writeA, 'B-1', { room: 'R-1' })
  await patch(app, tokens.writeA, left.id, { discharge: true })
  await patch(app, tokens.writeA, gone.id, { discharge: true })
  await app.inject({ method: 'DELETE', url: `/ward-occupants/${gone.id}`, headers: bearer(tokens.writeA) })
  await patch(app, tokens.writeA, older.id, { discharge: true })
  await patch(app, tokens.writeA, older.id, { discharge: false }) // re-opened
  const [bed] = (await app.inject({ url: '/beds', headers: bearer(tokens.readA) })).json().beds as Bed[]
  t.same(
    bed?.active.map((o) => o.id),
    [older.id, newer.id],
    'two in the shared bed, oldest first',
  )
  t.equal(bed?.lastDischarged?.id, left.id, 'the last discharge still on record')
  t.same(
    (await app.inject({ url: '/beds', headers: bearer(tokens.readA) })).json().beds,
    await expectedBeds(app, tokens.readA, 'A'),
  )
})

t.test('GET /beds refuses what it cannot answer', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const cases: [string, string | undefined, number, string][] = [
    ['/beds?facility=B', tokens.readA, 403, 'FACILITY_FORBIDDEN'],
    ['/beds?facility=B', tokens.adminA, 403, 'FACILITY_FORBIDDEN'],
    ['/beds?facility=', tokens.read, 400, 'FST_ERR_VALIDATION'],
    ['/beds?facility[$ne]=A', tokens.read, 400, 'FST_ERR_VALIDATION'],
    ['/beds?facility=A&facility=B', tokens.read, 400, 'FST_ERR_VALIDATION'],
    ['/beds?bed=B-1', tokens.read, 400, 'FST_ERR_VALIDATION'],
    [`/beds?facility=${'x'.repeat(201)}`, tokens.read, 400, 'FST_ERR_VALIDATION'],
    ['/beds', undefined, 401, 'FST_BEARER_AUTH_MISSING_AUTHORIZATION_HEADER'],
    ['/beds', 'fs_not-a-token', 401, ''],
  ]
  for (const [url, token, status, code] of cases) {
    const res = await app.inject({ url, headers: token === undefined ? {} : bearer(token) })
    t.equal(res.statusCode, status, `${url}: ${status}`)
    const body = res.json()
    t.equal(body.statusCode, status, `${url}: the error shape`)
    t.type(body.message, 'string')
    if (code) t.equal(body.code, code, `${url}: ${code}`)
  }
  const post = await app.inject({ method: 'POST', url: '/beds', headers: bearer(tokens.admin), payload: {} })
  t.equal(post.statusCode, 404, 'read-only: no other method')
})

t.test('GET /beds is in the OpenAPI document with its schemas', async (t) => {
  const { app } = await buildTestApp(t)
  const doc = (await app.inject({ url: '/openapi.json' })).json()
  const get = doc.paths['/beds']?.get
  t.ok(get, 'documented')
  t.ok(get.responses['200'].content['application/json'].schema, 'a response schema')
  t.same(
    get.parameters.map((p: { name: string }) => p.name),
    ['facility'],
  )
  t.notOk(doc.paths['/board'], 'the page is not an API operation')
})

t.test('a database from before the bed board lists the beds its history already had', async (t) => {
  const path = join(t.testdir(), 'old.db')
  const old = new BetterSqlite3(path)
  // Every migration before the one that made seen_beds.
  const all = loadMigrations()
  const before = all.slice(
    0,
    all.findIndex((m) => m.sql.includes('CREATE TABLE seen_beds')),
  )
  migrate(old, before)
  const insert = old.prepare(
    `INSERT INTO ward_occupants (id, created_at, created_by, facility, encounter, bed, occupied_at, occupied_by,
       discharged_at) VALUES (?, 1, 'n', ?, 'e', ?, 1, 'p', ?)`,
  )
  insert.run('a'.repeat(24), 'A', 'B-1', 5)
  insert.run('b'.repeat(24), 'A', 'B-2', null)
  insert.run('c'.repeat(24), null, 'B-3', null)
  old.close()

  const app = await buildApp(defaultConfig({ DATABASE_PATH: path, LOG_LEVEL: 'silent' }))
  t.teardown(() => app.close())
  const token = app.tokens.create({ account: 'v', role: 'read', facility: 'A', label: 'v' }).token
  const beds = (await app.inject({ url: '/beds', headers: bearer(token) })).json().beds as Bed[]
  t.same(
    beds.map((b) => [b.bed, b.active.length, b.lastDischarged?.id]),
    [
      ['B-1', 0, 'a'.repeat(24)],
      ['B-2', 1, undefined],
    ],
  )
})
