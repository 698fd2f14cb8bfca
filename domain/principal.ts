/** Who is calling: the account a token acts as, its role and the facility it is bound to. */
export const ROLES = ['read', 'write', 'admin'] as const
export type Role = (typeof ROLES)[number]

export interface Principal {
  tokenId: string
  account: string
  role: Role
  facility: string | null
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
