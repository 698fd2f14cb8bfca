import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { loadMigrations, migrate } from '../../db/migrations.js'
import { createNotificationRepository } from '../../db/repositories/notifications.js'
import { bearer, buildOidcApp, personToken, startTestProvider } from './setup.js'

// The migration that gives provider accounts their namespace (oidc:<claim value>): what a database
// of the version before holds under the bare names keeps its effect, and nothing more.

/** A database at migration 16, the version before the namespace. */
function version16(path: string) {
  const old = new BetterSqlite3(path)
  migrate(
    old,
    loadMigrations().filter((m) => m.version <= 16),
  )
  return old
}

/** A database as the version before left it: provider accounts under their bare claim values. */
function before(path: string): void {
  const old = version16(path)
  old.prepare("INSERT INTO provider_admins (account, facility, recorded_at) VALUES ('ann', 'A', 1)").run()
  old.prepare("INSERT INTO blocked_accounts (account, blocked_at, reason) VALUES ('leaver', 2, 'left')").run()
  old
    .prepare(
      `INSERT INTO tokens (id, secret_hash, account, role, facility, label, created_at)
       VALUES ('0123456789abcdef01234567', x'00', 'OIDC:ann', 'admin', NULL, NULL, 3)`,
    )
    .run()
  old.close()
}

t.test(
  'provider admins move to oidc:, blocks hold for both kinds, a service token in the namespace is revoked',
  async (t) => {
    const provider = await startTestProvider(t)
    const path = join(t.testdir(), 'ward.db')
    before(path)
    const { app } = await buildOidcApp(t, provider, { DATABASE_PATH: path })
    t.same(app.db.prepare('SELECT account, facility FROM provider_admins').all(), [
      { account: 'oidc:ann', facility: 'A' },
    ])
    t.same(
      app.db.prepare('SELECT account, blocked_at, reason FROM blocked_accounts ORDER BY account').all(),
      [
        { account: 'leaver', blocked_at: 2, reason: 'left' },
        { account: 'oidc:leaver', blocked_at: 2, reason: 'left' },
      ],
      'the block of a bare name now names both accounts it refused before',
    )
    const [revoked] = app.tokens.list()
    t.match(revoked, { account: 'OIDC:ann' })
    t.not(revoked?.revokedAt ?? null, null, 'a service token that would pass for a provider person is revoked')

    const leaver = await personToken(provider, 'leaver', ['ward-nurse'], 'A')
    const res = await app.inject({ url: '/ward-occupants', headers: bearer(leaver) })
    t.equal(res.statusCode, 401, 'the provider person blocked before is still refused')
    t.match(res.json(), { code: 'ACCOUNT_BLOCKED', message: /oidc:leaver/ })
    const ann = await personToken(provider, 'ann', ['ward-admin'], 'A')
    t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(ann) })).statusCode, 200)
    t.same(
      app.db.prepare('SELECT account, facility FROM provider_admins').all(),
      [{ account: 'oidc:ann', facility: 'A' }],
      'seen again: the same row, no second one under another name',
    )
  },
)

t.test('a provider admin whose bare claim already began with oidc: moves beside the one it now names', async (t) => {
  const path = join(t.testdir(), 'ward.db')
  const old = version16(path)
  // Recorded in this order, the first row's new name is the second row's old one.
  old.prepare("INSERT INTO provider_admins (account, facility, recorded_at) VALUES ('ann', 'A', 1)").run()
  old.prepare("INSERT INTO provider_admins (account, facility, recorded_at) VALUES ('oidc:ann', 'B', 2)").run()
  t.doesNotThrow(() => migrate(old, loadMigrations()), 'the upgrade goes through')
  t.same(old.prepare('SELECT account, facility FROM provider_admins ORDER BY recorded_at').all(), [
    { account: 'oidc:ann', facility: 'A' },
    { account: 'oidc:oidc:ann', facility: 'B' },
  ])
  old.close()
})

t.test(
  'a notification addressed to oidc:ann before the upgrade is not for the provider person ann after it',
  async (t) => {
    const provider = await startTestProvider(t)
    const path = join(t.testdir(), 'ward.db')
    const old = new BetterSqlite3(path)
    migrate(
      old,
      loadMigrations().filter((m) => m.version <= 16),
    )
    // Before, `oidc:ann` was a service account's name, or a provider claim that said `oidc:ann`.
    const notifications = createNotificationRepository(old)
    const addressed = (title: string, to: string[]) =>
      notifications.create({ code: 'c', type: 't', title, body: 'b', to, facility: null })
    const theirs = addressed('for oidc:ann', ['oidc:ann', 'bob'])
    await notifications.markSeen({ account: 'oidc:ann', facility: 'A', role: 'read' }, theirs.id)
    addressed('for ann', ['ann'])
    old.close()
    const { app } = await buildOidcApp(t, provider, { DATABASE_PATH: path })
    const ann = await personToken(provider, 'ann', ['ward-viewer'], 'A')
    const res = await app.inject({ url: '/notifications', headers: bearer(ann) })
    t.same(res.json().notifications, [], 'the person ann reads neither')
    // The provider claim it may have meant is oidc:oidc:ann now: it reads it, and has seen it.
    const meant = await personToken(provider, 'oidc:ann', ['ward-viewer'], 'A')
    const theirsNow = (await app.inject({ url: '/notifications', headers: bearer(meant) })).json()
    t.match(theirsNow, { notifications: [{ title: 'for oidc:ann', seenBy: ['oidc:oidc:ann'] }], total: 1 })
    const unseen = await app.inject({ url: '/notifications?$unseen=false', headers: bearer(meant) })
    t.equal(unseen.json().total, 1, 'its mark moved with it (the counts too)')
    t.same(
      app.db.prepare('SELECT recipients, seen_by FROM notifications WHERE id = ?').get(theirs.id),
      { recipients: '["oidc:oidc:ann","bob"]', seen_by: '["oidc:oidc:ann"]' },
      'the record says so too, in its order',
    )
    const counted = (table: string, column: string) =>
      app.db.prepare(`SELECT account, sum(${column}) AS n FROM ${table} GROUP BY account ORDER BY account`).all()
    t.same(counted('notification_audience_counts', 'total'), [
      { account: 'ann', n: 1 },
      { account: 'bob', n: 1 },
      { account: 'oidc:ann', n: 0 },
      { account: 'oidc:oidc:ann', n: 1 },
    ])
    t.same(counted('notification_seen_counts', 'seen'), [
      { account: 'oidc:ann', n: 0 },
      { account: 'oidc:oidc:ann', n: 1 },
    ])
  },
)

t.test('a block of oidc:x before the upgrade never blocks the provider person x after it', async (t) => {
  const provider = await startTestProvider(t)
  const path = join(t.testdir(), 'ward.db')
  const old = version16(path)
  // `oidc:x` was a service account or a provider claim saying `oidc:x`; `y` both kinds named y.
  for (const account of ['oidc:x', 'y', 'oidc:y'])
    old.prepare('INSERT INTO blocked_accounts (account, blocked_at, reason) VALUES (?, 1, NULL)').run(account)
  old.close()
  const { app } = await buildOidcApp(t, provider, { DATABASE_PATH: path })
  t.same(app.db.prepare('SELECT account FROM blocked_accounts ORDER BY account').pluck().all(), [
    'oidc:oidc:x',
    'oidc:oidc:y',
    'oidc:y',
    'y',
  ])
  const x = await personToken(provider, 'x', ['ward-nurse'], 'A')
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(x) })).statusCode, 200, 'x was never blocked')
  const meant = await personToken(provider, 'oidc:x', ['ward-nurse'], 'A')
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(meant) })).statusCode, 401, 'oidc:x still is')
})
