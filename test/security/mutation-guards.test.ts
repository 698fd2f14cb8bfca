import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { applyBedPolicy } from '../../db/bed-policy.js'
import { migrate } from '../../db/migrations.js'
import { learnsOf, type Mark, mayRead, type NotificationSnapshot } from '../../db/notification-audience.js'
import { createTokenRepository } from '../../db/tokens.js'
import { assertVersion, etagFor, parseIfMatch } from '../../db/versions.js'
import { facilityForCreate } from '../../plugins/auth.js'
import type { Notification } from '../../routes/notifications/schema.js'

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
