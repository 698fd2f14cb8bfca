/** How long a provider token may live, and how far ahead of this machine's clock it may be issued. */
export interface LifetimeRules {
  /** OIDC_MAX_TOKEN_LIFETIME_SECONDS: the longest `exp` − `iat` (or `exp` − now without `iat`). */
  maxLifetimeSeconds: number
  /** OIDC_CLOCK_SKEW_SECONDS: how far the provider's clock may be ahead. */
  clockSkewSeconds: number
}

/**
 * Why a token's times are refused beyond `exp` and `nbf` (checked with the signature), or null.
 * A stolen token lives as long as its `exp` says whatever the provider's policy, so a lifetime no
 * provider is set to issue (ten years) is refused; an `iat` ahead of the clock is a token from a
 * provider whose clock is wrong, or one made to outlive the cap. Pure: `now` is passed in.
 */
export function lifetimeRefusal(
  claims: { exp: number; iat?: unknown },
  nowMs: number,
  rules: LifetimeRules,
): string | null {
  const now = nowMs / 1000
  const { exp, iat } = claims
  if (iat !== undefined) {
    if (typeof iat !== 'number' || !Number.isFinite(iat)) return 'its `iat` is not a time'
    if (iat > now + rules.clockSkewSeconds) return "its `iat` is in the future (the provider's clock, or a forged time)"
    if (exp - iat > rules.maxLifetimeSeconds) return lifetimeMessage(exp - iat, rules)
    return null
  }
  if (exp - now > rules.maxLifetimeSeconds + rules.clockSkewSeconds) return lifetimeMessage(exp - now, rules)
  return null
}

function lifetimeMessage(seconds: number, rules: LifetimeRules): string {
  return `it is valid for ${Math.round(seconds)} s, longer than this service accepts (OIDC_MAX_TOKEN_LIFETIME_SECONDS=${rules.maxLifetimeSeconds})`
}
