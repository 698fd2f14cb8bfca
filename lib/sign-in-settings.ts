import { type Static, Type } from '@sinclair/typebox'
import { isLoopbackHost } from './hl7-network.js'
import { algorithmProblem } from './jwt-algorithms.js'
import { parsePairs } from './pairs.js'

/**
 * The settings of sign-in with the hospital's identity provider (docs/SIGN-IN.md), part of the one
 * environment schema (config.ts spreads them in); all off while OIDC_ISSUER is empty.
 */
export const SIGN_IN_SETTINGS = {
  OIDC_ISSUER: Type.String({
    default: '',
    description:
      "the identity provider's issuer, exactly as its tokens' `iss` (its discovery document is read from it); empty: only service tokens",
  }),
  OIDC_AUDIENCE: Type.String({
    default: '',
    description:
      "the `aud` a provider token must carry: the ward API's identifier at the provider (required with OIDC_ISSUER)",
  }),
  OIDC_JWKS_FILE: Type.String({
    default: '',
    description: "a file with the provider's public keys (a JWK Set), read instead of fetching them from the provider",
  }),
  OIDC_ALGORITHMS: Type.String({
    default: 'RS256,PS256,ES256',
    description: 'signature algorithms accepted, comma-separated; asymmetric only (never none, never HS*)',
  }),
  OIDC_CLOCK_SKEW_SECONDS: Type.Integer({
    minimum: 0,
    maximum: 300,
    default: 30,
    description: "how far the provider's clock may be from this machine's when `exp` and `nbf` are checked",
  }),
  OIDC_MAX_TOKEN_LIFETIME_SECONDS: Type.Integer({
    minimum: 60,
    maximum: 2_592_000,
    default: 86_400,
    description:
      'the longest lifetime a provider token may have: `exp` − `iat` (or `exp` − now without `iat`); longer ones are refused',
  }),
  OIDC_KEY_COOLDOWN_SECONDS: Type.Integer({
    minimum: 0,
    maximum: 3600,
    default: 30,
    description:
      "the least time between two fetches of the provider's keys asked for by tokens (an unknown kid, no keys yet)",
  }),
  OIDC_KEY_MAX_AGE_SECONDS: Type.Integer({
    minimum: 60,
    maximum: 86_400,
    default: 3600,
    description:
      "keys held longer than this are fetched again on the next provider token or check of a provider person's open stream: the longest a key the provider withdrew (and the tokens it signed) may still be trusted",
  }),
  OIDC_ACCOUNT_CLAIM: Type.String({
    minLength: 1,
    default: 'sub',
    description:
      'the claim naming the account, or claims tried in order (`upn,oid`: the first the token has decides); the account is `oidc:` and its value',
  }),
  OIDC_ROLE_CLAIM: Type.String({
    minLength: 1,
    default: 'roles',
    description: 'the path to the roles or groups: `realm_access.roles` (Keycloak), `roles` (Entra ID)',
  }),
  OIDC_ROLE_MAP: Type.String({
    default: '',
    description: 'provider role or group → read, write or admin: `ward-nurse=write,ward-viewer=read,ward-admin=admin`',
  }),
  OIDC_FACILITY_CLAIM: Type.String({
    minLength: 1,
    default: 'facility',
    description: 'the claim naming the facility the person works in',
  }),
  OIDC_ALLOW_UNBOUND: Type.Boolean({
    default: false,
    description: 'a provider token without a facility claim works across facilities (otherwise it is refused)',
  }),
  OIDC_BOARD_CLIENT_ID: Type.String({
    default: '',
    description:
      "the bed board's public client at the provider (sign-in with PKCE); empty: the board asks for a pasted token",
  }),
  OIDC_BOARD_SCOPE: Type.String({
    minLength: 1,
    default: 'openid',
    description:
      "the scope the board asks for: whatever makes the provider issue a token for the ward's API (Entra ID: `openid api://<ward-api>/.default`)",
  }),
  OIDC_TOKEN_MEMORY: Type.Integer({
    minimum: 0,
    maximum: 1_000_000,
    default: 10_000,
    description:
      'verified provider tokens remembered until they expire (a signature check per request costs more than a read)',
  }),
}

const SignInSchema = Type.Object(SIGN_IN_SETTINGS)
export type SignInSettings = Static<typeof SignInSchema>

/** The sign-in settings that only make sense together (docs/SIGN-IN.md). */
export function signInProblems(config: SignInSettings): [string, string][] {
  const problems: [string, string][] = []
  if (config.OIDC_ISSUER === '') {
    for (const key of ['OIDC_AUDIENCE', 'OIDC_JWKS_FILE', 'OIDC_ROLE_MAP', 'OIDC_BOARD_CLIENT_ID'] as const)
      if (config[key] !== '') problems.push([key, 'is only read with OIDC_ISSUER set'])
    return problems
  }
  if (!URL.canParse(config.OIDC_ISSUER)) problems.push(['OIDC_ISSUER', 'is not a URL'])
  else if (!secureProviderUrl(new URL(config.OIDC_ISSUER)))
    problems.push([
      'OIDC_ISSUER',
      'must be https (plain http only on this machine): anyone on the way could hand the service keys of their own',
    ])
  if (config.OIDC_AUDIENCE === '')
    problems.push(['OIDC_AUDIENCE', 'is required with OIDC_ISSUER: a token issued for another API must be refused'])
  if (config.OIDC_BOARD_CLIENT_ID !== '' && config.OIDC_BOARD_CLIENT_ID === config.OIDC_AUDIENCE)
    problems.push([
      'OIDC_BOARD_CLIENT_ID',
      "must not be OIDC_AUDIENCE: the board's ID tokens are issued for its client id, and would pass for access tokens",
    ])
  if (config.OIDC_ROLE_MAP === '') problems.push(['OIDC_ROLE_MAP', 'is required with OIDC_ISSUER'])
  try {
    // The roles of domain/principal.ts, which lib may not import (a lower rank).
    parsePairs(config.OIDC_ROLE_MAP, ['read', 'write', 'admin'])
  } catch (error) {
    problems.push(['OIDC_ROLE_MAP', (error as Error).message])
  }
  if (!/[^,\s]/.test(config.OIDC_ACCOUNT_CLAIM)) problems.push(['OIDC_ACCOUNT_CLAIM', 'names no claim'])
  const problem = algorithmProblem(config.OIDC_ALGORITHMS)
  if (problem !== null) problems.push(['OIDC_ALGORITHMS', problem])
  return problems
}

/**
 * The provider's keys are fetched from it, and its endpoints trusted: over https, or over plain
 * http from this machine only. The issuer and every URL its discovery document names.
 */
export function secureProviderUrl(url: URL): boolean {
  if (url.protocol === 'https:') return true
  return url.protocol === 'http:' && isLoopbackHost(url.hostname.replace(/^\[(.*)\]$/, '$1'))
}
