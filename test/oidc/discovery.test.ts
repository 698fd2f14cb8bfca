import type { Test } from 'tap'
import t from 'tap'
import { operatorHealth } from '../helper.js'
import type { TestProvider } from './provider.js'
import { bearer, buildOidcApp, personToken, startTestProvider } from './setup.js'

// The provider's discovery document decides where the keys come from: it is believed only when it
// names the issuer configured, exactly, and every URL in it is https (plain http only on this
// machine). Here the ward's issuer is https://id.hospital.example, reached (as a name server would
// send it) at the test provider; what the document says is rewritten the way an attacker on the
// way, or a misconfigured provider, would.

const ISSUER = 'https://id.hospital.example/realms/ward'
/** A host of the hospital's network, not this machine: reached over plain http by the bug. */
const ELSEWHERE = 'http://keys.elsewhere.example'

type Rewrite = (document: Record<string, unknown>, provider: TestProvider) => Record<string, unknown>

/** globalThis.fetch routed to the test provider for ISSUER and ELSEWHERE, its discovery rewritten. */
function hospitalNetwork(t: Test, provider: TestProvider, rewrite: Rewrite): void {
  const realFetch = globalThis.fetch
  globalThis.fetch = (async (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
    const url = String(input)
    for (const prefix of [ISSUER, ELSEWHERE])
      if (url.startsWith(prefix)) {
        const answer = await realFetch(provider.issuer + url.slice(prefix.length), init)
        if (!url.endsWith('/.well-known/openid-configuration')) return answer
        const document = { ...((await answer.json()) as Record<string, unknown>), issuer: ISSUER }
        return Response.json(rewrite(document, provider))
      }
    return realFetch(input, init)
  }) as typeof fetch
  t.teardown(() => {
    globalThis.fetch = realFetch
  })
}

/** The app of the hospital's issuer, and whether a nurse's token (its iss that issuer) gets in. */
async function signInWith(t: Test, rewrite: Rewrite) {
  const provider = await startTestProvider(t)
  hospitalNetwork(t, provider, rewrite)
  const { app } = await buildOidcApp(t, provider, { OIDC_ISSUER: ISSUER })
  const token = await personToken(provider, 'ann', ['ward-nurse'], 'A', { iss: ISSUER })
  const res = await app.inject({ url: '/ward-occupants', headers: bearer(token) })
  return { status: res.statusCode, health: (await operatorHealth(app)).json() }
}

t.test('a discovery document as it should be: the keys are fetched, the token accepted', async (t) => {
  const { status, health } = await signInWith(t, (document) => document)
  t.equal(status, 200, 'the routing of the test works: refusals below are the checks')
  t.match(health, { identityProvider: { keys: 1 } })
})

t.test('a discovery document naming another issuer is not believed', async (t) => {
  for (const other of ['https://evil.example/realms/ward', `${ISSUER}/`, 'https://ID.hospital.example/realms/ward']) {
    const { status, health } = await signInWith(t, (document) => ({ ...document, issuer: other }))
    t.equal(status, 503, `${other}: no keys, so no provider token`)
    t.match(health, {
      identityProvider: { keys: 0, failing: { message: /names issuer .* not https:\/\/id\.hospital/ } },
    })
  }
})

t.test('every URL of the discovery document must be https: keys over plain http are never trusted', async (t) => {
  const cases: [string, Rewrite][] = [
    ['jwks_uri on another host', (d) => ({ ...d, jwks_uri: `${ELSEWHERE}/jwks` })],
    ['token_endpoint on another host', (d) => ({ ...d, token_endpoint: `${ELSEWHERE}/token` })],
    ['authorization_endpoint on another host', (d) => ({ ...d, authorization_endpoint: `${ELSEWHERE}/auth` })],
    ['jwks_uri not a URL', (d) => ({ ...d, jwks_uri: 'keys' })],
  ]
  for (const [name, rewrite] of cases) {
    const { status, health } = await signInWith(t, rewrite)
    t.equal(status, 503, `${name}: refused`)
    t.match(health, { identityProvider: { keys: 0, failing: { message: /not https/ } } }, `${name}: /health says why`)
  }
  // Plain http on this machine stays allowed, as for the issuer (a provider beside the service).
  const local = await signInWith(t, (d, provider) => ({ ...d, jwks_uri: `${provider.issuer}/jwks` }))
  t.equal(local.status, 200, 'http on this machine')
})
