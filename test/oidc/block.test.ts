import { join } from 'node:path'
import t from 'tap'
import { runCli } from '../../cli/run.js'
import { capture } from '../cli/capture.js'
import { openStream, waitUntil } from '../feed/helpers.js'
import { bearer, buildOidcApp, personToken, startTestProvider } from './setup.js'

// `facility-service account block` refuses an account on the running server at once: its provider
// tokens (still within their lifetime), its service tokens, its stream tickets and open streams.

t.test('a blocked account is refused at once, whatever token it holds, until unblocked', async (t) => {
  const provider = await startTestProvider(t)
  const path = join(t.testdir(), 'ward.db')
  const { app } = await buildOidcApp(t, provider, { DATABASE_PATH: path })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  const leaver = await personToken(provider, 'leaver', ['ward-nurse'], 'A')
  const colleague = await personToken(provider, 'stayer', ['ward-nurse'], 'A')
  const service = app.tokens.create({ account: 'oidc-leaver', role: 'read', facility: 'A' }).token
  for (const token of [leaver, colleague, service])
    t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(token) })).statusCode, 200, 'accepted before')
  const ticket = (await app.inject({ method: 'POST', url: '/events/tickets', headers: bearer(leaver) })).json().ticket
  const stream = await openStream(`${base}/events`, bearer(leaver))
  t.teardown(() => stream.close())
  t.equal(stream.status, 200)

  const io = capture()
  t.equal(await runCli(['--database', path, 'account', 'block', 'oidc:leaver', '--reason', 'left the ward'], io), 0)
  t.same(io.stdout, ['blocked account oidc:leaver (identity provider tokens whose account claim is leaver)'])

  const res = await app.inject({ url: '/ward-occupants', headers: bearer(leaver) })
  t.equal(res.statusCode, 401, 'refused on the very next request (the verified token was remembered)')
  t.match(res.json(), { code: 'ACCOUNT_BLOCKED', message: /oidc:leaver is blocked/ })
  t.match(res.headers['www-authenticate'], /^Bearer/)
  for (const token of [colleague, service])
    t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(token) })).statusCode, 200, 'others go on')
  t.equal((await openStream(`${base}/events?ticket=${ticket}`)).status, 401, 'a ticket issued before is void')
  await stream.until((s) => s.ended, 10_000, 'the open stream to end')

  const list = capture()
  t.equal(await runCli(['--database', path, 'account', 'list', '--json'], list), 0)
  t.match(JSON.parse(list.stdout[0] as string), { account: 'oidc:leaver', kind: 'provider', reason: 'left the ward' })
  t.equal(await runCli(['--database', path, 'account', 'unblock', 'oidc:leaver'], capture()), 0)
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(leaver) })).statusCode, 200, 'unblocked')
  const again = capture()
  t.equal(await runCli(['--database', path, 'account', 'unblock', 'oidc:leaver'], again), 1)
  t.match(again.stderr.join('\n'), /not blocked/)
})

t.test('a provider account never shares a service account: sub=admin is oidc:admin', async (t) => {
  const provider = await startTestProvider(t)
  const path = join(t.testdir(), 'ward.db')
  const { app } = await buildOidcApp(t, provider, { DATABASE_PATH: path })
  // The bootstrap admin's service account, and a notification for it alone.
  const admin = app.tokens.create({ account: 'admin', role: 'admin', facility: null }).token
  const notify = capture()
  const notifyArgs = ['notify', '--code', 'c', '--type', 't', '--title', 'for admin', '--body', 'b', '--to', 'admin']
  t.equal(await runCli(['--database', path, ...notifyArgs], notify), 0, notify.stderr.join('\n'))
  const impostor = await personToken(provider, 'admin', ['ward-viewer'], 'ward-a')
  const theirs = await app.inject({ url: '/notifications', headers: bearer(impostor) })
  t.equal(theirs.statusCode, 200)
  t.same(theirs.json().notifications, [], "the provider's admin sees none of the service admin's notifications")
  const [note] = (await app.inject({ url: '/notifications', headers: bearer(admin) })).json().notifications
  t.match(note, { title: 'for admin' })
  const seen = await app.inject({ method: 'POST', url: `/notifications/${note.id}/seen`, headers: bearer(impostor) })
  t.equal(seen.statusCode, 404, 'nor marks it seen')
  const unseen = (await app.inject({ url: '/notifications?$unseen=true', headers: bearer(admin) })).json()
  t.equal(unseen.total, 1, 'still unseen for the real admin')

  const writer = await personToken(provider, 'admin', ['ward-nurse'], 'ward-a')
  const created = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(writer),
    payload: { encounter: 'e1', bed: 'b1', occupiedBy: 'p1' },
  })
  t.equal(created.statusCode, 200, created.body)
  t.equal(created.json().createdBy, 'oidc:admin', 'createdBy names the provider account')
  const audit = (await app.inject({ url: '/audit', headers: bearer(admin) })).json()
  t.ok(
    audit.entries.some(
      (e: { account: string; resource: string }) => e.account === 'oidc:admin' && e.resource === 'ward-occupants',
    ),
    'and so does the audit',
  )

  // Blocking one never blocks the other.
  const block = capture()
  t.equal(await runCli(['--database', path, 'account', 'block', 'admin'], block), 0)
  t.same(block.stdout, ['blocked account admin (service tokens of that account)'])
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(admin) })).statusCode, 401, 'the service admin')
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(writer) })).statusCode, 200, 'not oidc:admin')
  t.equal(await runCli(['--database', path, 'account', 'unblock', 'admin'], capture()), 0)
  t.equal(await runCli(['--database', path, 'account', 'block', 'oidc:admin'], capture()), 0)
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(writer) })).statusCode, 401, 'oidc:admin')
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(admin) })).statusCode, 200, 'not admin')

  const bare = capture()
  t.equal(await runCli(['--database', path, 'account', 'block', 'ann'], bare), 0)
  t.match(bare.stderr.join('\n'), /no service token acts as ann; a person of the identity provider is oidc:ann/)

  // No service token may take the provider's namespace.
  const refused = capture()
  const create = ['token', 'create', '--account', 'OIDC:ann', '--role', 'read']
  t.equal(await runCli(['--database', path, ...create], refused), 1)
  t.match(refused.stderr.join('\n'), /identity provider's namespace/)
  t.throws(() => app.tokens.create({ account: 'oidc:ann', role: 'admin', facility: null }), /namespace/)
})

t.test("a provider token's stream ends once the person's last token has expired", async (t) => {
  const provider = await startTestProvider(t)
  const { app } = await buildOidcApp(t, provider, {
    DATABASE_PATH: join(t.testdir(), 'ward.db'),
    OIDC_CLOCK_SKEW_SECONDS: 0,
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  const short = await personToken(provider, 'ann', ['ward-viewer'], 'A', { exp: Math.floor(Date.now() / 1000) + 3 })
  const stream = await openStream(`${base}/events`, bearer(short))
  t.teardown(() => stream.close())
  t.equal(stream.status, 200)
  // No renewed token comes: the stream is ended by the feed's check, as for an expired fs_ token.
  await stream.until((s) => s.ended, 15_000, 'the stream to end after the expiry')
  t.ok(stream.ended)
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(short) })).statusCode, 401)
})

t.test("a provider person's stream ends when their newer token names another facility", async (t) => {
  const provider = await startTestProvider(t)
  const { app } = await buildOidcApp(t, provider, { DATABASE_PATH: join(t.testdir(), 'ward.db') })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  const inA = await personToken(provider, 'mover', ['ward-nurse'], 'A')
  const stream = await openStream(`${base}/events`, bearer(inA))
  t.teardown(() => stream.close())
  t.equal(stream.status, 200)
  // The same person, moved to ward B: the stream opened as A's must not go on showing A.
  const inB = await personToken(provider, 'mover', ['ward-nurse'], 'B')
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(inB) })).statusCode, 200)
  await stream.until((s) => s.ended, 10_000, 'the stream opened for facility A to end')
  t.ok(stream.ended)
})

t.test("an older token of the same person neither shortens nor replaces their newer token's session", async (t) => {
  const provider = await startTestProvider(t)
  const { app } = await buildOidcApp(t, provider)
  const now = Math.floor(Date.now() / 1000)
  const newer = await personToken(provider, 'mover', ['ward-nurse'], 'B', { iat: now, exp: now + 600 })
  // Issued two minutes before, for ward A, and expiring in one: a tab left open, a replayed token.
  const older = await personToken(provider, 'mover', ['ward-nurse'], 'A', { iat: now - 120, exp: now + 60 })
  for (const token of [newer, older])
    t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(token) })).statusCode, 200)
  const tokens = app.providerTokens as NonNullable<typeof app.providerTokens>
  t.match(tokens.session('oidc:mover'), { principal: { facility: 'B' }, expiresAt: (now + 600) * 1000 })
  t.ok(tokens.session('oidc:mover', (now + 300) * 1000), "alive past the older token's expiry")
  const sameWard = await personToken(provider, 'mover', ['ward-nurse'], 'B', { iat: now - 60, exp: now + 30 })
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(sameWard) })).statusCode, 200)
  t.match(tokens.session('oidc:mover'), { expiresAt: (now + 600) * 1000 }, 'nor by an older one of the same ward')
  // A newer token does replace it (the stream opened for B ends when a newer one names A).
  const newest = await personToken(provider, 'mover', ['ward-viewer'], 'A', { iat: now + 1, exp: now + 300 })
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(newest) })).statusCode, 200)
  t.match(tokens.session('oidc:mover'), { principal: { facility: 'A', role: 'read' }, expiresAt: (now + 300) * 1000 })
})

t.test('with OIDC_TOKEN_MEMORY=0 every person keeps their stream while others come', async (t) => {
  const provider = await startTestProvider(t)
  const { app } = await buildOidcApp(t, provider, { DATABASE_PATH: join(t.testdir(), 'ward.db'), OIDC_TOKEN_MEMORY: 0 })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  const first = await openStream(`${base}/events`, bearer(await personToken(provider, 'ann', ['ward-nurse'], 'A')))
  t.teardown(() => first.close())
  t.equal(first.status, 200)
  // Others after her: with one remembered session hers was pushed out and her stream ended.
  for (const name of ['bob', 'cy', 'dee']) {
    const token = await personToken(provider, name, ['ward-nurse'], 'A')
    t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(token) })).statusCode, 200)
  }
  // The feed checks every stream's token each second (feed/index.ts): count its checks of hers
  // from now on, and what they found, however slow the machine.
  const tokens = app.providerTokens as NonNullable<typeof app.providerTokens>
  const session = tokens.session
  const found: boolean[] = []
  tokens.session = (tokenId, now) => {
    const answer = session(tokenId, now)
    if (tokenId === 'oidc:ann') found.push(answer !== undefined)
    return answer
  }
  t.teardown(() => {
    tokens.session = session
  })
  await waitUntil(() => found.length >= 3 || first.ended, 'three checks of her stream', 30_000)
  t.same(found.slice(0, 3), [true, true, true], 'each check found her session')
  t.notOk(first.ended, 'her stream goes on')
})

t.test(
  "a block names a provider person whatever the case of the namespace's prefix (OIDC:ann is oidc:ann)",
  async (t) => {
    const provider = await startTestProvider(t)
    const path = join(t.testdir(), 'ward.db')
    const { app } = await buildOidcApp(t, provider, { DATABASE_PATH: path })
    const ann = await personToken(provider, 'ann', ['ward-nurse'], 'A')
    t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(ann) })).statusCode, 200, 'accepted before')
    const io = capture()
    t.equal(await runCli(['--database', path, 'account', 'block', 'OIDC:ann'], io), 0)
    t.same(io.stdout, ['blocked account oidc:ann (identity provider tokens whose account claim is ann)'])
    t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(ann) })).statusCode, 401, 'refused at once')
    t.equal(await runCli(['--database', path, 'account', 'unblock', 'Oidc:ann'], capture()), 0)
    app.repos.blockedAccounts.block('OIDC:zed')
    t.equal(await runCli(['--database', path, 'account', 'unblock', 'OIDC:zed'], capture()), 0, 'an older row goes')
    t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(ann) })).statusCode, 200, 'unblocked')
  },
)

t.test('a notification addressed to OIDC:ann reaches the provider person oidc:ann', async (t) => {
  const provider = await startTestProvider(t)
  const path = join(t.testdir(), 'ward.db')
  const { app } = await buildOidcApp(t, provider, { DATABASE_PATH: path })
  const notify = ['notify', '--code', 'c', '--type', 't', '--title', 'for ann', '--body', 'b', '--to', 'OIDC:ann']
  const io = capture()
  t.equal(await runCli(['--database', path, ...notify], io), 0, io.stderr.join('\n'))
  const ann = await personToken(provider, 'ann', ['ward-viewer'], 'A')
  const res = await app.inject({ url: '/notifications', headers: bearer(ann) })
  t.match(res.json().notifications, [{ title: 'for ann' }])
})
