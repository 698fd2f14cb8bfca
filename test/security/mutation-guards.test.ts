import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { applyBedPolicy } from '../../db/bed-policy.js'
import { migrate } from '../../db/migrations.js'
import { learnsOf, type Mark, mayRead, type NotificationSnapshot } from '../../db/repositories/notification-audience.js'
import { createTokenRepository } from '../../db/repositories/tokens.js'
import { StorageState } from '../../db/storage-faults.js'
import { createWriteQueue } from '../../db/write-queue.js'
import { assertVersion, etagFor, parseIfMatch } from '../../domain/versions.js'
import { facilityForCreate } from '../../plugins/auth/index.js'
import type { Notification } from '../../schemas/notifications.js'
import { bearer, buildTestApp } from '../helper.js'

// The rules that guard patients' data, each pinned down at its edge: written where `npm run mutate`
// (docs/SECURITY.md, "Mutation score") showed a changed rule that no other selected test noticed.

function database() {
  const db = new BetterSqlite3(':memory:')
  migrate(db)
  return db
}

t.test('a token is accepted only with its secret, before its expiry, until revoked', async (t) => {
  const db = database()
  t.teardown(() => db.close())
  const tokens = createTokenRepository(db)
  const now = 1_000_000
  const { token, info } = tokens.create({ account: 'u', role: 'write', facility: 'A', expiresAt: now + 10 }, now)
  t.same(tokens.check(token, now), {
    ok: true,
    principal: { tokenId: info.tokenId, account: 'u', role: 'write', facility: 'A' },
  })
  t.same(tokens.check(token, now + 9), tokens.check(token, now), 'valid until the last millisecond before expiry')
  t.same(tokens.check(token, now + 10), { ok: false, reason: 'expired' }, 'expired at expiresAt')
  const wrong = `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`
  t.same(tokens.check(wrong, now), { ok: false, reason: 'unknown', wrongSecretFor: info.tokenId }, 'a wrong secret')
  t.same(tokens.check(`${token}x`, now), { ok: false, reason: 'malformed' })
  t.same(tokens.check(` ${token}`, now), { ok: false, reason: 'malformed' }, 'the format is anchored')
  const other = `fs_${'0'.repeat(24)}_${token.slice(-43)}`
  t.same(tokens.check(other, now), { ok: false, reason: 'unknown' }, 'an unknown id names no token')
  t.equal(tokens.revoke(info.tokenId, now), true)
  t.equal(tokens.revoke(info.tokenId, now), false, 'revoked once')
  t.same(tokens.check(token, now), { ok: false, reason: 'revoked' })
  const forever = tokens.create({ account: 'v', role: 'read' }, now)
  t.equal(tokens.check(forever.token, Number.MAX_SAFE_INTEGER).ok, true, 'no expiry: valid for ever')
})

t.test('If-Match: one of the listed versions, or *, or no header', async (t) => {
  t.equal(etagFor(3), '"3"')
  t.same(parseIfMatch(undefined), null)
  t.same(parseIfMatch(' "1" , "2",,'), ['"1"', '"2"'])
  t.doesNotThrow(() => assertVersion(null, 'r', 'id', 5))
  t.doesNotThrow(() => assertVersion(['*'], 'r', 'id', 5))
  t.doesNotThrow(() => assertVersion(['"4"', '"5"'], 'r', 'id', 5))
  t.throws(() => assertVersion(['"4"'], 'r', 'id', 5), { code: 'PRECONDITION_FAILED' })
  t.throws(() => assertVersion([], 'r', 'id', 5), { code: 'PRECONDITION_FAILED' })
  t.throws(() => assertVersion(['5'], 'r', 'id', 5), { code: 'PRECONDITION_FAILED' })
  t.throws(() => assertVersion(['W/"5"'], 'r', 'id', 5), { code: 'PRECONDITION_FAILED' })
})

t.test('the facility of a new record', async (t) => {
  const principal = (facility: string | null) => ({ tokenId: 't', account: 'a', role: 'write' as const, facility })
  t.equal(facilityForCreate(principal(null), undefined), null)
  t.equal(facilityForCreate(principal(null), 'B'), 'B')
  t.equal(facilityForCreate(principal('A'), undefined), 'A')
  t.equal(facilityForCreate(principal('A'), 'A'), 'A')
  t.throws(() => facilityForCreate(principal('A'), 'B'), { code: 'FACILITY_FORBIDDEN' })
})

t.test('who may read a notification, and learn of its readers (the live feed uses these)', async (t) => {
  const record = (facility?: string, to?: string[]) =>
    ({ id: 'n', createdAt: 1, code: 'c', type: 't', title: 't', body: 'b', seenBy: [], facility, to }) as Notification
  const snap = (r: Notification, broadcast: boolean, unboundOnly = false): NotificationSnapshot => ({
    record: r,
    broadcast,
    unboundOnly,
    marks: [],
  })
  const viewer = (facility: string | null, account = 'me') => ({ account, facility, role: 'read' as const })
  const cases: [string, NotificationSnapshot, ReturnType<typeof viewer>, boolean][] = [
    ['own facility, everyone', snap(record('A'), true), viewer('A'), true],
    ['other facility, everyone', snap(record('B'), true), viewer('A'), false],
    ['every facility', snap(record(), true), viewer('A'), true],
    ['a record without facility (unbound only), bound viewer', snap(record(), true, true), viewer('A'), false],
    ['a record without facility (unbound only), unbound viewer', snap(record(), true, true), viewer(null), true],
    ['addressed to me', snap(record('A', ['me']), false), viewer('A'), true],
    ['addressed to another', snap(record('A', ['you']), false), viewer('A'), false],
    ['addressed to me, other facility', snap(record('B', ['me']), false), viewer('A'), false],
    ['addressed to me, unbound viewer, any facility', snap(record('B', ['me']), false), viewer(null), true],
    ['addressed to another, unbound viewer', snap(record('B', ['you']), false), viewer(null), false],
  ]
  for (const [name, snapshot, who, want] of cases) t.equal(mayRead(who, snapshot), want, name)
  const mark = (account: string, facility: string | null): Mark => ({ account, facility })
  t.equal(learnsOf(viewer('A'), mark('x', 'A')), true, 'a reader of my facility')
  t.equal(learnsOf(viewer('A'), mark('x', 'B')), false, 'a reader of another facility')
  t.equal(learnsOf(viewer('A'), mark('x', null)), false, 'a reader without facility')
  t.equal(learnsOf(viewer('A'), mark('me', 'B')), true, 'my own mark, made anywhere')
  t.equal(learnsOf(viewer(null), mark('x', 'B')), true, 'an unbound viewer learns of every reader')
})

t.test('the bed rule: the index exists only for exclusive beds, and cannot be forced on a clash', async (t) => {
  const db = database()
  t.teardown(() => db.close())
  const index = () =>
    db.prepare("SELECT count(*) FROM sqlite_schema WHERE name = 'ward_occupants_active_bed'").pluck().get()
  applyBedPolicy(db, 'exclusive')
  t.equal(index(), 1)
  applyBedPolicy(db, 'shared')
  t.equal(index(), 0)
  const insert = db.prepare(
    `INSERT INTO ward_occupants (id, created_at, created_by, facility, encounter, bed, occupied_at, occupied_by, discharged_at)
     VALUES (?, 1, 'u', ?, 'e', ?, 1, 'p', ?)`,
  )
  insert.run('a1', 'A', 'B-1', null)
  insert.run('a2', 'B', 'B-1', null) // same bed name, other facility: no clash
  insert.run('a3', null, 'B-2', null)
  insert.run('a4', null, 'B-2', 5) // discharged: no clash
  applyBedPolicy(db, 'exclusive')
  t.equal(index(), 1, 'no clash: the rule is back')
  t.throws(() => insert.run('a5', null, 'B-2', null), /UNIQUE/, 'facility-less beds are guarded too')
  applyBedPolicy(db, 'shared')
  insert.run('a5', null, 'B-2', null)
  t.throws(() => applyBedPolicy(db, 'exclusive'), /bed B-2 of facility \(none\) has more than one active occupant/)
  t.equal(index(), 0, 'nothing half-done')
})

t.test('the active-bed rule names only its own conflicts: other failures are not BED_OCCUPIED', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const post = (payload: object) =>
    app.inject({ method: 'POST', url: '/ward-occupants', headers: bearer(tokens.write), payload })
  // Another unique index and a trigger that fails a write: neither is a bed conflict.
  app.db.exec('CREATE UNIQUE INDEX test_unique_encounter ON ward_occupants (encounter)')
  app.db.exec(
    "CREATE TRIGGER test_boom BEFORE INSERT ON ward_occupants WHEN NEW.bed = 'boom' BEGIN SELECT RAISE(ABORT, 'boom'); END",
  )
  t.equal((await post({ encounter: 'e1', bed: 'B-1', occupiedBy: 'p' })).statusCode, 200)
  const same = await post({ encounter: 'e1', bed: 'B-2', occupiedBy: 'p' })
  t.equal(same.statusCode, 500, 'another unique index: an internal error, not a bed conflict')
  t.not(same.json().code, 'BED_OCCUPIED')
  const boom = await post({ encounter: 'e2', bed: 'boom', occupiedBy: 'p' })
  t.equal(boom.statusCode, 500, 'a failing write is not a bed conflict')
  const clash = await post({ encounter: 'e3', bed: 'B-1', occupiedBy: 'p' })
  t.equal(clash.statusCode, 409)
  t.equal(clash.json().code, 'BED_OCCUPIED', 'the real conflict still is')
})

t.test('a token without facility changes the records of every facility', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const created = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(tokens.writeA),
    payload: { encounter: 'e', bed: 'B-1', occupiedBy: 'p' },
  })
  const { id } = created.json() as { id: string }
  const patch = await app.inject({
    method: 'PATCH',
    url: `/ward-occupants/${id}`,
    headers: bearer(tokens.write),
    payload: { provider: 'dr-all' },
  })
  t.equal(patch.statusCode, 200)
  t.equal(app.db.prepare('SELECT provider FROM ward_occupants WHERE id = ?').pluck().get(id), 'dr-all')
  const removed = await app.inject({ method: 'DELETE', url: `/ward-occupants/${id}`, headers: bearer(tokens.write) })
  t.equal(removed.statusCode, 200)
  t.equal(app.db.prepare('SELECT count(*) FROM ward_occupants WHERE id = ?').pluck().get(id), 0, 'deleted')
})

t.test('HEAD is a read', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const res = await app.inject({ method: 'HEAD', url: '/ward-occupants', headers: bearer(tokens.read) })
  t.equal(res.statusCode, 200)
})

t.test('wrong secrets for one token id are throttled per id, from any address', async (t) => {
  const { app, tokens } = await buildTestApp(t, { AUTH_FAILURE_LIMIT: 3 })
  const wrong = `${tokens.readA.slice(0, -1)}${tokens.readA.endsWith('A') ? 'B' : 'A'}`
  for (let i = 1; i <= 3; i++) {
    const res = await app.inject({ url: '/ward-occupants', headers: bearer(wrong), remoteAddress: `10.0.0.${i}` })
    t.equal(res.statusCode, 401, `failure ${i}`)
  }
  const next = await app.inject({ url: '/ward-occupants', headers: bearer(wrong), remoteAddress: '10.0.0.9' })
  t.equal(next.statusCode, 429, 'the id has failed too often, whatever the address')
  const valid = await app.inject({ url: '/ward-occupants', headers: bearer(tokens.readA), remoteAddress: '10.0.0.9' })
  t.equal(valid.statusCode, 200, 'the right secret still passes')
})

t.test('a write that cannot begin (the database is locked) fails alone, and the queue goes on', async (t) => {
  const path = join(t.testdir(), 'locked.db')
  const db = new BetterSqlite3(path, { timeout: 0 })
  const other = new BetterSqlite3(path, { timeout: 0 })
  t.teardown(() => {
    db.close()
    other.close()
  })
  db.exec('PRAGMA journal_mode = WAL; CREATE TABLE x (v INTEGER)')
  // Refused after 20 ms of waiting rather than the default 5 s: how long is not the point here.
  const queue = createWriteQueue(db, { storage: new StorageState(), busyTimeoutMs: 20 })
  other.exec('BEGIN IMMEDIATE')
  await t.rejects(
    queue.run(() => db.prepare('INSERT INTO x VALUES (1)').run()),
    /locked|busy/i,
  )
  other.exec('ROLLBACK')
  await queue.run(() => db.prepare('INSERT INTO x VALUES (2)').run())
  t.same(db.prepare('SELECT v FROM x').pluck().all(), [2], 'only the later write is stored')
})
