/** Who is calling: the account a token acts as, its role and the facility it is bound to. */
export const ROLES = ['read', 'write', 'admin'] as const
export type Role = (typeof ROLES)[number]

export interface Principal {
  tokenId: string
  account: string
  role: Role
  facility: string | null
  /**
   * The SMART scopes of a provider token (fhir/scopes.ts), which narrow what its role allows on
   * /fhir only; absent for a service token, whose role alone decides.
   */
  scopes?: readonly string[]
}

/** Why a token is not accepted, in the order they are checked. */
export type TokenRefusal = 'malformed' | 'unknown' | 'expired' | 'revoked'

/**
 * The one rule for whether a token still counts at `now`: not revoked, and not past its expiry
 * (an expiry equal to now has passed). Requests, open event streams and tickets all ask it.
 */
export function tokenRefusal(
  token: { revokedAt: number | null; expiresAt: number | null },
  now: number,
): 'revoked' | 'expired' | null {
  if (token.revokedAt !== null) return 'revoked'
  if (token.expiresAt !== null && token.expiresAt <= now) return 'expired'
  return null
}

/**
 * The accounts of the identity provider's people: `oidc:` and the claim's value (`oidc:ann`), so a
 * provider token whose claim says `admin` is never the service account `admin`. No service token
 * may take an account in this namespace, in any letter case (db/repositories/tokens.ts).
 */
export const PROVIDER_ACCOUNT_PREFIX = 'oidc:'

export function providerAccount(claimValue: string): string {
  return `${PROVIDER_ACCOUNT_PREFIX}${claimValue}`
}

export function isProviderAccount(account: string): boolean {
  return account.slice(0, PROVIDER_ACCOUNT_PREFIX.length).toLowerCase() === PROVIDER_ACCOUNT_PREFIX
}

/**
 * An account as an operator typed it, with the namespace's prefix in the case tokens carry
 * (`OIDC:ann` is `oidc:ann`): a block must name the account the provider's tokens act as.
 */
export function accountAsNamed(account: string): string {
  return isProviderAccount(account) ? providerAccount(account.slice(PROVIDER_ACCOUNT_PREFIX.length)) : account
}

/** Why a service token may not act as this account, or null. */
export function serviceAccountProblem(account: string): string | null {
  if (account.trim() === '') return 'must not be empty'
  if (isProviderAccount(account))
    return `${account} is in the identity provider's namespace (${PROVIDER_ACCOUNT_PREFIX}...): choose an account without that prefix`
  return null
}
