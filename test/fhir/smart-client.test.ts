import { decodeJwt } from 'jose'
import type { Test } from 'tap'
import t from 'tap'
import { BOARD_CLIENT } from '../oidc/provider.js'
import { bearer, buildOidcApp, startTestProvider } from '../oidc/setup.js'
import { SMART_APP_CLIENT, signIn, startSmartApp } from './smart-sign-in.js'

// A SMART app no one here wrote (fhirclient, its Node entry) signs in through a real OpenID provider
// (oidc-provider) with SMART scopes, in a standalone launch with PKCE, and reads the ward's FHIR
// resources from a listening server: each scope grants what it says and nothing more.

const SCOPES = 'user/Location.rs user/Encounter.rs user/*.cruds user/*.read patient/Encounter.rs'

async function ward(t: Test) {
  let fhirBase = ''
  const app = await startSmartApp(t, () => fhirBase)
  const provider = await startTestProvider(t, {
    resourceScope: SCOPES,
    clients: [
      {
        client_id: SMART_APP_CLIENT,
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code'],
        response_types: ['code'],
        redirect_uris: [app.redirectUri],
      },
    ],
  })
  const server = await buildOidcApp(t, provider, { OIDC_BOARD_CLIENT_ID: BOARD_CLIENT })
  await server.app.listen({ port: 0, host: '127.0.0.1' })
  fhirBase = `http://127.0.0.1:${server.app.server.address() && (server.app.server.address() as { port: number }).port}/fhir`
  // Who signs in: a nurse of ward A at the provider.
  provider.claims.set('ann', { realm_access: { roles: ['ward-nurse'] }, facility: 'A' })
  return { app, provider, server, fhirBase }
}

t.test('fhirclient signs in with user/Location.rs: its token carries the scope, the REST API ignores it', async (t) => {
  const { app, server } = await ward(t)
  const client = await signIn(app, 'openid user/Location.rs', 'ann')
  const token = client.state.tokenResponse?.access_token as string
  t.match(decodeJwt(token), { sub: 'ann', scope: /(^| )user\/Location\.rs( |$)/ })
  t.notMatch(decodeJwt(token).scope, /Encounter/)
  const rest = await server.app.inject({ url: '/ward-occupants', headers: bearer(token) })
  t.equal(rest.statusCode, 200, 'SMART scopes apply to /fhir only: the REST API answers by role')
})
