import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { publicJwk, startProvider, WARD_API } from '../oidc/provider.js'
import { personToken, ROLE_MAP } from '../oidc/setup.js'
import { stopServer } from '../reliability/server-process.js'
import { installAlone, releaseBuild, serveExecutable } from './helpers.js'

// The single executable alone (no Node, no node_modules) accepting the tokens of a real OpenID
// provider on 127.0.0.1: its keys fetched through discovery, or read from OIDC_JWKS_FILE.
const release = releaseBuild()

const settings = (issuer: string) => ({
  OIDC_ISSUER: issuer,
  OIDC_AUDIENCE: WARD_API,
  OIDC_ROLE_CLAIM: 'realm_access.roles',
  OIDC_ROLE_MAP: ROLE_MAP,
  OIDC_BOARD_CLIENT_ID: 'bed-board',
})

t.test('keys fetched from the provider; kept when it goes away', async (t) => {
  const provider = await startProvider()
  t.teardown(() => provider.close())
  const install = installAlone(t.testdir(), release.executable)
  const server = await serveExecutable(install, settings(provider.issuer))
  t.teardown(() => stopServer(server))
  const get = (token: string) =>
    fetch(`${server.base}/ward-occupants`, { headers: { authorization: `Bearer ${token}` } })

  provider.claims.set('ward-script', { realm_access: { roles: ['ward-nurse'] }, facility: 'A' })
  const scripted = await provider.clientCredentials()
  t.equal((await get(scripted)).status, 200, 'a client-credentials token from the provider')
  t.equal((await get(await provider.clientCredentials('api://pharmacy'))).status, 401, 'one for another API')
  // The details of /health are the operator's: the first admin token (no facility) asks.
  const operator = readFileSync(join(install.dir, 'data', 'first-admin-token'), 'utf8').trim()
  const health = await fetch(`${server.base}/health`, { headers: { authorization: `Bearer ${operator}` } })
  t.match(await health.json(), { identityProvider: { keys: 1 } })
  t.match(await (await fetch(`${server.base}/health`)).json(), { identityProvider: { ok: true } }, 'anonymous: ok only')
  t.equal((await fetch(`${server.base}/board/sign-in.js`)).status, 200, "the board's sign-in script is carried")
  t.match(await (await fetch(`${server.base}/board/sign-in`)).json(), { provider: { clientId: 'bed-board' } })

  await provider.close()
  t.equal((await get(await personToken(provider, 'ann', ['ward-viewer'], 'A'))).status, 200, 'provider down: keys kept')
  t.notOk(server.output().includes(scripted.split('.')[2] as string), 'no token in the log')
})

t.test('keys from OIDC_JWKS_FILE, the provider never reached', async (t) => {
  const provider = await startProvider()
  await provider.close()
  const install = installAlone(t.testdir(), release.executable)
  const file = join(install.dir, 'jwks.json')
  writeFileSync(file, JSON.stringify({ keys: provider.keys.map(publicJwk) }))
  const server = await serveExecutable(install, { ...settings(provider.issuer), OIDC_JWKS_FILE: file })
  t.teardown(() => stopServer(server))
  const token = await personToken(provider, 'ann', ['ward-admin'], 'A')
  const res = await fetch(`${server.base}/audit`, { headers: { authorization: `Bearer ${token}` } })
  t.equal(res.status, 200)
})
