import { test } from 'tap'
import { smartConfiguration } from '../../fhir/smart-configuration.js'

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
