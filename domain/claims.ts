import { parsePairs } from '../lib/pairs.js'
import { ROLES, type Role } from './principal.js'

/** How the claims of a provider's access token name the account, the role and the facility. */
export interface ClaimRules {
  /**
   * The claims (paths) that name the account, in order: the first the token has decides, e.g.
   * `sub`, or `upn` then `oid` (Entra ID's app-only tokens have no `upn`).
   */
  accountClaims: readonly string[]
  /** The path to the provider's roles or groups, e.g. `realm_access.roles` (Keycloak) or `roles` (Entra ID). */
  roleClaim: string
  /** Provider role or group → the service's role. */
  roleMap: ReadonlyMap<string, Role>
  /** The claim (a path) that names the facility the person works in. */
  facilityClaim: string
  /** A token without a facility works across facilities instead of being refused. */
  allowUnbound: boolean
}

export interface ClaimedPrincipal {
  account: string
  role: Role
  facility: string | null
}

/** Why an authentic token still gives no principal: a claim is missing or maps to nothing. */
export type ClaimRefusal = { claim: string; message: string }

export type ClaimOutcome = { ok: true; principal: ClaimedPrincipal } | { ok: false; refusal: ClaimRefusal }

const RANK: Record<Role, number> = { read: 0, write: 1, admin: 2 }

/**
 * The value at a path of dot-separated names. A claim whose own name has dots (some providers
 * use URLs as claim names) is found too: the whole path is tried as one name first.
 */
export function claimAt(claims: unknown, path: string): unknown {
  if (typeof claims !== 'object' || claims === null) return undefined
  if (Object.hasOwn(claims, path)) return (claims as Record<string, unknown>)[path]
  let value: unknown = claims
  for (const name of path.split('.')) {
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, name))
      return undefined
    value = (value as Record<string, unknown>)[name]
  }
  return value
}

/** A claim read as one non-empty string: a string, or an array holding exactly one. */
function single(value: unknown): string | undefined {
  if (Array.isArray(value)) return value.length === 1 ? single(value[0]) : undefined
  return typeof value === 'string' && value !== '' ? value : undefined
}

/**
 * The service role of a person: every provider role or group the map knows counts, and the
 * highest wins (a nurse who is also a ward admin acts as admin). A single string counts as one
 * role; anything that is not a string is ignored.
 */
export function roleFrom(value: unknown, roleMap: ReadonlyMap<string, Role>): Role | null {
  const names = Array.isArray(value) ? value : [value]
  let best: Role | null = null
  for (const name of names) {
    if (typeof name !== 'string') continue
    const role = roleMap.get(name)
    if (role !== undefined && (best === null || RANK[role] > RANK[best])) best = role
  }
  return best
}

/**
 * Claims → who and what, for a token whose signature, issuer, audience and times are already
 * checked. Pure: no keys, no clock, no I/O, so every claim shape can be tried without a provider.
 */
export function principalFromClaims(claims: unknown, rules: ClaimRules): ClaimOutcome {
  // The first claim present decides: one present but unreadable (two values) is not passed over
  // for the next, which may name someone else.
  const accountClaim = rules.accountClaims.find((name) => claimAt(claims, name) !== undefined)
  const account = accountClaim === undefined ? undefined : single(claimAt(claims, accountClaim))
  if (account === undefined) {
    const names = rules.accountClaims.map((name) => `\`${name}\``).join(' or ')
    return refuse(
      accountClaim ?? rules.accountClaims.join(','),
      `the token has no single ${names} claim naming the account`,
    )
  }
  const role = roleFrom(claimAt(claims, rules.roleClaim), rules.roleMap)
  if (role === null)
    return refuse(
      rules.roleClaim,
      `the token's \`${rules.roleClaim}\` claim names no role this service maps (OIDC_ROLE_MAP)`,
    )
  const facilityValue = claimAt(claims, rules.facilityClaim)
  const facility = single(facilityValue)
  if (facility === undefined) {
    // A claim present but unreadable (two facilities, a number) is never taken for "no facility":
    // unbound means every facility, so only a truly absent claim may give it.
    if (facilityValue !== undefined || !rules.allowUnbound)
      return refuse(rules.facilityClaim, `the token has no single \`${rules.facilityClaim}\` claim naming a facility`)
    return { ok: true, principal: { account, role, facility: null } }
  }
  return { ok: true, principal: { account, role, facility } }
}

function refuse(claim: string, message: string): ClaimOutcome {
  return { ok: false, refusal: { claim, message } }
}

/** Reads OIDC_ACCOUNT_CLAIM: `sub`, or claims tried in order, `upn,oid`. */
export function parseClaimList(text: string): string[] {
  return text
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '')
}

/** Reads OIDC_ROLE_MAP: `ward-nurse=write,ward-viewer=read,ward-admin=admin` (lib/pairs.ts). */
export function parseRoleMap(text: string): Map<string, Role> {
  return parsePairs(text, ROLES)
}

/** Entra ID's spelling of a SMART scope: `user.Location.rs`, `system.all.read` (no `/` or `*` in its names). */
const ENTRA_SCOPE = /^(user|system|patient)\.([A-Za-z]+)\.(.+)$/

function fromEntraSpelling(name: string): string {
  const match = ENTRA_SCOPE.exec(name)
  if (match === null) return name
  const [, context, type, permissions] = match as unknown as [string, string, string, string]
  return `${context}/${type === 'all' ? '*' : type}.${permissions}`
}

/** A space-separated string (RFC 9068 `scope`, Entra's `scp`) or an array of names (Okta's `scp`). */
function names(value: unknown): string[] {
  if (typeof value === 'string') return value.split(' ').filter((name) => name !== '')
  if (Array.isArray(value)) return value.filter((name): name is string => typeof name === 'string')
  return []
}

/**
 * The scopes a provider token was granted, for the FHIR API's SMART scopes (fhir/scopes.ts): the
 * `scope` claim, and `scp` (Entra ID's delegated permissions, which it spells `user.Location.rs`).
 * A token with neither (Entra ID's app-only tokens) has its app `roles` spelled so. Always a list:
 * a provider token without scopes is granted nothing on /fhir, whatever its role.
 */
export function scopesFromClaims(claims: unknown): string[] {
  const scope = claimAt(claims, 'scope')
  const scp = claimAt(claims, 'scp')
  if (scope === undefined && scp === undefined)
    return names(claimAt(claims, 'roles'))
      .filter((name) => ENTRA_SCOPE.test(name))
      .map(fromEntraSpelling)
  return [...names(scope), ...names(scp).map(fromEntraSpelling)]
}
