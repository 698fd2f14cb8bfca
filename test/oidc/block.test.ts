import { join } from 'node:path'
import t from 'tap'
import { runCli } from '../../cli/run.js'
import { capture } from '../cli/capture.js'
import { openStream } from '../feed/helpers.js'
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
  const service = app.tokens.create({ account: 'leaver', role: 'read', facility: 'A' }).token
  for (const token of [leaver, colleague, service])
    t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(token) })).statusCode, 200, 'accepted before')
  const ticket = (await app.inject({ method: 'POST', url: '/events/tickets', headers: bearer(leaver) })).json().ticket
  const stream = await openStream(`${base}/events`, bearer(leaver))
  t.teardown(() => stream.close())
  t.equal(stream.status, 200)

  const io = capture()
  t.equal(await runCli(['--database', path, 'account', 'block', 'leaver', '--reason', 'left the ward'], io), 0)
  t.same(io.stdout, ['blocked account leaver'])

  for (const token of [leaver, service]) {
    const res = await app.inject({ url: '/ward-occupants', headers: bearer(token) })
    t.equal(res.statusCode, 401, 'refused on the very next request (the verified token was remembered)')
    t.match(res.json(), { code: 'ACCOUNT_BLOCKED', message: /leaver is blocked/ })
    t.match(res.headers['www-authenticate'], /^Bearer/)
  }
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(colleague) })).statusCode, 200, 'others go on')
  t.equal((await openStream(`${base}/events?ticket=${ticket}`)).status, 401, 'a ticket issued before is void')
  await stream.until((s) => s.ended, 10_000, 'the open stream to end')

  const list = capture()
  t.equal(await runCli(['--database', path, 'account', 'list', '--json'], list), 0)
  t.match(JSON.parse(list.stdout[0] as string), { account: 'leaver', reason: 'left the ward' })
  t.equal(await runCli(['--database', path, 'account', 'unblock', 'leaver'], capture()), 0)
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(leaver) })).statusCode, 200, 'unblocked')
  const again = capture()
  t.equal(await runCli(['--database', path, 'account', 'unblock', 'leaver'], again), 1)
  t.match(again.stderr.join('\n'), /not blocked/)
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
  // The feed checks the streams' tokens every second: three checks later hers still runs.
  await new Promise((resolve) => setTimeout(resolve, 3500))
  t.notOk(first.ended, 'her stream goes on')
})
