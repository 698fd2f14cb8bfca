import { decodeJwt } from 'jose'
import type { Test } from 'tap'
import t from 'tap'
import { encounterId } from '../../fhir/encounter.js'
import { SCRIPT_CLIENT, WARD_API } from '../oidc/provider.js'
import { bearer, buildOidcApp, startTestProvider } from '../oidc/setup.js'
import { type Client, SMART_APP_CLIENT, signIn, startSmartApp } from './smart-sign-in.js'
import { assertValidFhir } from './validate.js'

// A SMART app no one here wrote (fhirclient, its Node entry) signs in through a real OpenID provider
// (oidc-provider) with SMART scopes, in a standalone launch with PKCE, finding the provider from
// /fhir/.well-known/smart-configuration, and reads the ward's FHIR resources from a listening
// server: each scope grants what it says and nothing more.

const SCOPES = [
  'user/Location.rs',
  'user/Encounter.rs',
  'user/*.cruds',
  'user/*.read',
  'patient/Encounter.rs',
  'system/Location.rs',
].join(' ')

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
  const server = await buildOidcApp(t, provider)
  await server.app.listen({ port: 0, host: '127.0.0.1' })
  fhirBase = `http://127.0.0.1:${(server.app.server.address() as { port: number }).port}/fhir`
  for (const [n, facility] of [
    [1, 'A'],
    [2, 'A'],
    [3, 'B'],
  ] as const) {
    const res = await server.app.inject({
      method: 'POST',
      url: '/ward-occupants',
      headers: bearer(server.admin),
      payload: { encounter: `enc-${n}`, bed: `bed-${n}`, occupiedBy: `patient-${n}`, room: 'R-1', facility },
    })
    if (res.statusCode !== 200) throw new Error(res.body)
  }
  // Who signs in: a nurse of ward A at the provider.
  provider.claims.set('ann', { realm_access: { roles: ['ward-nurse'] }, facility: 'A' })
  return { app, provider, server, fhirBase }
}

type Bundle = { resourceType: string; total?: number; entry?: { resource: { resourceType: string; id: string } }[] }

/** The same request as the app's, for what fhirclient does not hand back whole (headers, the 403 body). */
async function raw(client: Client, path: string) {
  const res = await fetch(`${client.state.serverUrl}/${path}`, {
    headers: { authorization: `Bearer ${client.state.tokenResponse?.access_token}`, accept: 'application/fhir+json' },
  })
  return { status: res.status, headers: res.headers, body: await res.json() }
}

t.test('user/Location.rs: Locations yes, Encounters a 403 naming user/Encounter.rs', async (t) => {
  const { app, server } = await ward(t)
  const client = await signIn(app, 'openid user/Location.rs', 'ann')
  const token = client.state.tokenResponse?.access_token as string
  t.match(decodeJwt(token), { sub: 'ann', scope: /(^| )user\/Location\.rs( |$)/ }, 'the provider granted the scope')
  t.notMatch(decodeJwt(token).scope, /Encounter|\*/)

  const locations = (await client.request('Location')) as Bundle
  assertValidFhir(t, locations, 'the Location search')
  const beds = locations.entry?.map((e) => e.resource.id) ?? []
  t.ok(beds.length >= 3, `ward A's ward, room and beds (${beds.length})`)
  const first = locations.entry?.[0]?.resource.id as string
  t.match(await client.request(`Location/${first}`), { resourceType: 'Location', id: first }, 'a read')

  const refused = await client.request('Encounter').then(
    () => null,
    (error: { status?: number; message: string }) => error,
  )
  t.equal(refused?.status, 403, 'fhirclient sees the refusal')
  t.match(refused?.message, /missing scope user\/Encounter\.rs/)
  const outcome = await raw(client, 'Encounter?status=in-progress')
  t.equal(outcome.status, 403)
  t.match(outcome.headers.get('content-type'), /^application\/fhir\+json/)
  t.match(outcome.body, {
    resourceType: 'OperationOutcome',
    issue: [{ severity: 'error', code: 'forbidden', diagnostics: 'missing scope user/Encounter.rs' }],
  })
  assertValidFhir(t, outcome.body, 'the refusal')
  t.equal(outcome.headers.get('www-authenticate'), 'Bearer error="insufficient_scope", scope="user/Encounter.rs"')
  t.equal((await raw(client, `Encounter/${encounterId('A', 'enc-1')}`)).status, 403, 'a read of an Encounter too')

  const rest = await server.app.inject({ url: '/ward-occupants', headers: bearer(token) })
  t.equal(rest.statusCode, 200, 'SMART scopes apply to /fhir only: the REST API answers by role')
  t.match(rest.body, /enc-1/, "the REST API: ward A's occupants")
  t.notMatch(rest.body, /enc-3/, "not ward B's")
})

t.test('user/*.cruds and v1 user/*.read: Locations and Encounters, of ward A only', async (t) => {
  const { app } = await ward(t)
  for (const scope of ['user/*.cruds', 'user/*.read', 'user/Location.rs user/Encounter.rs']) {
    const client = await signIn(app, `openid ${scope}`, 'ann')
    const locations = (await client.request('Location')) as Bundle
    t.ok((locations.entry?.length ?? 0) >= 3, `${scope}: Locations`)
    const encounters = (await client.request('Encounter')) as Bundle
    assertValidFhir(t, encounters, `${scope}: the Encounter search`)
    t.same(
      encounters.entry?.map((e) => e.resource.id).sort(),
      [encounterId('A', 'enc-1'), encounterId('A', 'enc-2')].sort(),
      `${scope}: ward A's Encounters, not B's`,
    )
    const id = encounterId('A', 'enc-1')
    t.match(await client.request(`Encounter/${id}`), { resourceType: 'Encounter', id })
    const other = encounterId('B', 'enc-3')
    t.equal((await raw(client, `Encounter/${other}`)).status, 404, `${scope}: ward B's Encounter is not found`)
  }
})

t.test('what a search includes needs a scope too: no Encounters through a Location scope', async (t) => {
  const { app } = await ward(t)
  const locationsOnly = await signIn(app, 'openid user/Location.rs', 'ann')
  const revinclude = await raw(locationsOnly, 'Location?_revinclude=Encounter:location')
  t.equal(revinclude.status, 403)
  t.match(revinclude.body, { issue: [{ code: 'forbidden', diagnostics: 'missing scope user/Encounter.rs' }] })
  t.notMatch(JSON.stringify(revinclude.body), /enc-1/, 'no Encounter in the refusal')

  const encountersOnly = await signIn(app, 'openid user/Encounter.rs', 'ann')
  const include = await raw(encountersOnly, 'Encounter?_include=Encounter:location')
  t.equal(include.status, 403)
  t.match(include.body, { issue: [{ diagnostics: 'missing scope user/Location.rs' }] })

  const both = await signIn(app, 'openid user/Location.rs user/Encounter.rs', 'ann')
  const beds = (await both.request('Location?_revinclude=Encounter:location')) as Bundle
  t.equal(
    beds.entry?.filter((e) => e.resource.resourceType === 'Encounter').length,
    2,
    "with both scopes: ward A's two Encounters beside their beds",
  )
})

t.test('patient/ scopes grant nothing here, and the refusal says so', async (t) => {
  const { app } = await ward(t)
  const client = await signIn(app, 'openid patient/Encounter.rs', 'ann')
  const outcome = await raw(client, 'Encounter')
  t.equal(outcome.status, 403)
  t.match(outcome.body.issue[0].diagnostics, /^missing scope user\/Encounter\.rs \(patient\/ scopes grant nothing/)
})

t.test("a script's system/ token: what it lacks is named system/...", async (t) => {
  const { provider, fhirBase } = await ward(t)
  provider.claims.set(SCRIPT_CLIENT.id, { realm_access: { roles: ['ward-viewer'] }, facility: 'A' })
  const response = await fetch(`${provider.issuer}/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${SCRIPT_CLIENT.id}:${SCRIPT_CLIENT.secret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', resource: WARD_API, scope: 'system/Location.rs' }),
  })
  const token = ((await response.json()) as { access_token: string }).access_token
  t.match(decodeJwt(token), { scope: 'system/Location.rs' })
  const get = (path: string) => fetch(`${fhirBase}/${path}`, { headers: bearer(token) })
  t.equal((await get('Location')).status, 200)
  const refused = await get('Encounter')
  t.equal(refused.status, 403)
  t.match(await refused.json(), { issue: [{ diagnostics: 'missing scope system/Encounter.rs' }] })
})

t.test('a provider token with no SMART scope may do nothing on /fhir; a service token is not limited', async (t) => {
  const { provider, server, fhirBase } = await ward(t)
  provider.claims.set(SCRIPT_CLIENT.id, { realm_access: { roles: ['ward-admin'] } })
  const noScopes = await provider.sign({ sub: 'bob', realm_access: { roles: ['ward-admin'] }, facility: 'A' })
  const refused = await fetch(`${fhirBase}/Location`, { headers: bearer(noScopes) })
  t.equal(refused.status, 403)
  t.match(await refused.json(), { issue: [{ code: 'forbidden', diagnostics: 'missing scope user/Location.rs' }] })
  const service = await fetch(`${fhirBase}/Encounter`, { headers: bearer(server.admin) })
  t.equal(service.status, 200, 'an fs_ token: its role alone decides')
})

t.test('scopes only narrow the role: a write needs both the scope and a write role', async (t) => {
  const { provider, fhirBase } = await ward(t)
  const questionnaire = JSON.stringify({
    resourceType: 'Questionnaire',
    status: 'active',
    title: 'Pain',
    item: [{ linkId: 'where', text: 'Where does it hurt?', type: 'string' }],
  })
  const post = async (roles: string[], scope: string) => {
    const token = await provider.sign({ sub: 'cy', realm_access: { roles }, facility: 'A', scope })
    const res = await fetch(`${fhirBase}/Questionnaire`, {
      method: 'POST',
      headers: { ...bearer(token), 'content-type': 'application/fhir+json' },
      body: questionnaire,
    })
    return { status: res.status, body: (await res.json()) as { issue?: { diagnostics: string }[] } }
  }
  const readOnlyScope = await post(['ward-nurse'], 'user/*.rs')
  t.equal(readOnlyScope.status, 403, 'a nurse with read scopes only')
  t.equal(readOnlyScope.body.issue?.[0]?.diagnostics, 'missing scope user/Questionnaire.c')
  const viewer = await post(['ward-viewer'], 'user/*.cruds')
  t.equal(viewer.status, 403, 'a viewer with every scope: the role still says no')
  t.match(viewer.body.issue?.[0]?.diagnostics, /needs a write token/)
  const created = await post(['ward-nurse'], 'user/Questionnaire.c')
  t.equal(created.status, 201, JSON.stringify(created.body))
  t.equal((await post(['ward-nurse'], 'user/Questionnaire.write')).status, 201, 'the v1 spelling')
})
