import { SCOPES_SUPPORTED } from './scopes.js'

/**
 * `/.well-known/smart-configuration` (SMART App Launch 2.x, §"Conformance") from the identity
 * provider's checked discovery document: its issuer and endpoints, and what this server honours.
 * Pure. Only what is true is said: a capability the provider's document rules out is left out.
 */
export interface SmartConfiguration {
  issuer: string
  jwks_uri: string
  authorization_endpoint: string
  token_endpoint: string
  token_endpoint_auth_methods_supported?: string[]
  revocation_endpoint?: string
  introspection_endpoint?: string
  grant_types_supported: string[]
  scopes_supported: string[]
  response_types_supported: string[]
  code_challenge_methods_supported: string[]
  capabilities: string[]
}

const GRANTS = ['authorization_code', 'client_credentials', 'refresh_token']

function strings(value: unknown): string[] | undefined {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : undefined
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined
}

/** Null when the document names no authorization or token endpoint: SMART clients could not sign in. */
export function smartConfiguration(discovery: Record<string, unknown>): SmartConfiguration | null {
  const authorization = text(discovery.authorization_endpoint)
  const token = text(discovery.token_endpoint)
  if (authorization === undefined || token === undefined) return null
  // OpenID Connect Discovery's defaults, for the fields a provider leaves out.
  const grants = strings(discovery.grant_types_supported) ?? ['authorization_code', 'implicit']
  const authMethods = strings(discovery.token_endpoint_auth_methods_supported) ?? ['client_secret_basic']
  const responseTypes = strings(discovery.response_types_supported) ?? []
  // Entra ID supports S256 without saying so; a provider that lists its methods is taken at its word.
  const challenges = strings(discovery.code_challenge_methods_supported) ?? ['S256']
  const confidential = authMethods.some((m) => m === 'client_secret_basic' || m === 'client_secret_post')
  const capabilities = [
    'launch-standalone',
    'client-public',
    ...(confidential ? ['client-confidential-symmetric'] : []),
    ...(authMethods.includes('private_key_jwt') ? ['client-confidential-asymmetric'] : []),
    'sso-openid-connect',
    'permission-user',
    'permission-v1',
    'permission-v2',
  ]
  const optional = {
    token_endpoint_auth_methods_supported: strings(discovery.token_endpoint_auth_methods_supported),
    revocation_endpoint: text(discovery.revocation_endpoint),
    introspection_endpoint: text(discovery.introspection_endpoint),
  }
  return {
    issuer: discovery.issuer as string,
    jwks_uri: discovery.jwks_uri as string,
    authorization_endpoint: authorization,
    token_endpoint: token,
    ...Object.fromEntries(Object.entries(optional).filter(([, value]) => value !== undefined)),
    grant_types_supported: GRANTS.filter((grant) => grants.includes(grant)),
    scopes_supported: [...SCOPES_SUPPORTED],
    response_types_supported: responseTypes.includes('code') ? ['code'] : [],
    code_challenge_methods_supported: challenges.filter((method) => method === 'S256'),
    capabilities,
  }
}
