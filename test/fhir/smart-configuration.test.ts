import type { Test } from 'tap'
import { test } from 'tap'
import { buildApp } from '../../app.js'
import { defaultConfig } from '../../config.js'
import { smartConfiguration } from '../../fhir/smart-configuration.js'
import { buildOidcApp, startTestProvider } from '../oidc/setup.js'
import { sharedCompilers } from '../shared-compilers.js'
import { assertValidFhir } from './validate.js'

const KEYCLOAK = {
  issuer: 'https://id.example/realms/ward',
  jwks_uri: 'https://id.example/realms/ward/protocol/openid-connect/certs',
  authorization_endpoint: 'https://id.example/realms/ward/protocol/openid-connect/auth',
  token_endpoint: 'https://id.example/realms/ward/protocol/openid-connect/token',
  revocation_endpoint: 'https://id.example/realms/ward/protocol/openid-connect/revoke',
  grant_types_supported: ['authorization_code', 'implicit', 'refresh_token', 'password', 'client_credentials'],
  response_types_supported: ['code', 'none', 'id_token', 'token'],
  code_challenge_methods_supported: ['plain', 'S256'],
  token_endpoint_auth_methods_supported: ['private_key_jwt', 'client_secret_basic', 'client_secret_post'],
}

test("the provider's endpoints, and only the grants, methods and capabilities that are true", async (t) => {
  t.same(smartConfiguration(KEYCLOAK), {
    issuer: KEYCLOAK.issuer,
    jwks_uri: KEYCLOAK.jwks_uri,
    authorization_endpoint: KEYCLOAK.authorization_endpoint,
    token_endpoint: KEYCLOAK.token_endpoint,
    token_endpoint_auth_methods_supported: KEYCLOAK.token_endpoint_auth_methods_supported,
    revocation_endpoint: KEYCLOAK.revocation_endpoint,
    grant_types_supported: ['authorization_code', 'client_credentials', 'refresh_token'],
    scopes_supported: ['openid', 'user/*.cruds', 'user/*.rs', 'system/*.cruds', 'system/*.rs'],
    response_types_supported: ['code'],
    code_challenge_methods_supported: ['S256'],
    capabilities: [
      'launch-standalone',
      'client-public',
      'client-confidential-symmetric',
      'client-confidential-asymmetric',
      'sso-openid-connect',
      'permission-user',
      'permission-v1',
      'permission-v2',
    ],
  })
})

test('a provider saying less: the OpenID defaults; one saying no', async (t) => {
  const entra = {
    issuer: 'https://login.microsoftonline.com/t/v2.0',
    jwks_uri: 'https://login.microsoftonline.com/t/discovery/v2.0/keys',
    authorization_endpoint: 'https://login.microsoftonline.com/t/oauth2/v2.0/authorize',
    token_endpoint: 'https://login.microsoftonline.com/t/oauth2/v2.0/token',
    response_types_supported: ['code', 'id_token', 'code id_token', 'id_token token'],
  }
  const config = smartConfiguration(entra)
  t.same(config?.grant_types_supported, ['authorization_code'], 'OpenID default: authorization_code (and implicit)')
  t.same(config?.code_challenge_methods_supported, ['S256'], 'a provider that lists no methods: S256 (Entra ID)')
  t.ok(config?.capabilities.includes('client-confidential-symmetric'), 'default auth method client_secret_basic')
  t.notOk(config?.capabilities.includes('client-confidential-asymmetric'))
  t.notOk('revocation_endpoint' in (config ?? {}), 'absent endpoints are left out')

  const plainOnly = smartConfiguration({ ...KEYCLOAK, code_challenge_methods_supported: ['plain'] })
  t.same(plainOnly?.code_challenge_methods_supported, [], 'no S256 at the provider: none said')
  const publicOnly = smartConfiguration({ ...KEYCLOAK, token_endpoint_auth_methods_supported: ['none'] })
  t.notOk(publicOnly?.capabilities.includes('client-confidential-symmetric'))
  t.same(smartConfiguration({ ...KEYCLOAK, response_types_supported: ['id_token'] })?.response_types_supported, [])
})

test('a provider without an authorization or token endpoint: no SMART configuration', async (t) => {
  const { token_endpoint, ...noToken } = KEYCLOAK
  const { authorization_endpoint, ...noAuthorization } = KEYCLOAK
  t.equal(smartConfiguration(noToken), null)
  t.equal(smartConfiguration(noAuthorization), null)
  t.equal(smartConfiguration({ ...KEYCLOAK, token_endpoint: 7 }), null)
})

const WELL_KNOWN = '/fhir/.well-known/smart-configuration'

/** The discovery documents the service fetches, from now until the test ends. */
function countDiscoveries(t: Test): string[] {
  const fetched: string[] = []
  const realFetch = globalThis.fetch
  globalThis.fetch = ((input: Parameters<typeof fetch>[0], init?: RequestInit) => {
    if (String(input).endsWith('/.well-known/openid-configuration')) fetched.push(String(input))
    return realFetch(input, init)
  }) as typeof fetch
  t.teardown(() => {
    globalThis.fetch = realFetch
  })
  return fetched
}

test("GET /fhir/.well-known/smart-configuration, anonymous: the provider's issuer and endpoints", async (t) => {
  const provider = await startTestProvider(t)
  const discovery = (await (await fetch(`${provider.issuer}/.well-known/openid-configuration`)).json()) as Record<
    string,
    unknown
  >
  const discoveries = countDiscoveries(t)
  const { app } = await buildOidcApp(t, provider)
  for (let i = 0; i < 3; i++) {
    const res = await app.inject({ url: WELL_KNOWN })
    t.equal(res.statusCode, 200, res.body)
    t.match(res.headers['content-type'], /^application\/json/, 'JSON, as SMART says (not a FHIR resource)')
    t.match(res.json(), {
      issuer: provider.issuer,
      jwks_uri: discovery.jwks_uri,
      authorization_endpoint: discovery.authorization_endpoint,
      token_endpoint: discovery.token_endpoint,
      code_challenge_methods_supported: ['S256'],
      scopes_supported: ['openid', 'user/*.cruds', 'user/*.rs', 'system/*.cruds', 'system/*.rs'],
      response_types_supported: ['code'],
    })
    t.ok(res.json().capabilities.includes('permission-v2'))
    t.ok(res.json().grant_types_supported.includes('client_credentials'))
  }
  t.equal(discoveries.length, 1, 'the discovery document is read once (with the keys) and kept')
})

test('without an identity provider: 404, an OperationOutcome saying SMART is not configured', async (t) => {
  const app = await buildApp(defaultConfig({ DATABASE_PATH: ':memory:', LOG_LEVEL: 'silent' }), sharedCompilers)
  t.teardown(() => app.close())
  const res = await app.inject({ url: WELL_KNOWN })
  t.equal(res.statusCode, 404)
  t.match(res.headers['content-type'], /^application\/fhir\+json/)
  t.match(res.json(), {
    resourceType: 'OperationOutcome',
    issue: [{ code: 'not-found', diagnostics: /not configured/ }],
  })
  assertValidFhir(t, res.json())
})

test('a provider whose discovery document cannot be read: 503 with Retry-After, not asked again at once', async (t) => {
  const provider = await startTestProvider(t)
  const { app } = await buildOidcApp(t, provider, { OIDC_KEY_COOLDOWN_SECONDS: 3600 })
  await provider.close()
  // The keys were loaded at the start, so the document is known: a later outage changes nothing.
  t.equal((await app.inject({ url: WELL_KNOWN })).statusCode, 200, 'kept from the start')

  const down = await startTestProvider(t)
  await down.close()
  const { app: late } = await buildOidcApp(t, down, { OIDC_KEY_COOLDOWN_SECONDS: 3600 })
  const discoveries = countDiscoveries(t)
  const res = await late.inject({ url: WELL_KNOWN })
  t.equal(res.statusCode, 503)
  t.equal(res.headers['retry-after'], '30')
  t.match(res.json(), {
    resourceType: 'OperationOutcome',
    issue: [{ code: 'transient', diagnostics: /discovery document could not be read/ }],
  })
  assertValidFhir(t, res.json())
  t.equal((await late.inject({ url: WELL_KNOWN })).statusCode, 503)
  t.same(discoveries, [], 'within the cool-down the failure is kept: anonymous requests never reach the provider')
})
