/**
 * The JWS algorithms a provider token may be signed with: asymmetric ones only. `none` would
 * accept an unsigned token, and an HMAC algorithm would let anyone who has the provider's public
 * key (it is public) sign tokens with it as the secret.
 */
export const ASYMMETRIC_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
] as const

export function readAlgorithms(text: string): string[] {
  return text
    .split(',')
    .map((a) => a.trim())
    .filter((a) => a !== '')
}

/** Why an OIDC_ALGORITHMS value is refused, or null. */
export function algorithmProblem(text: string): string | null {
  const names = readAlgorithms(text)
  if (names.length === 0) return 'names no algorithm'
  const refused = names.filter((a) => !(ASYMMETRIC_ALGORITHMS as readonly string[]).includes(a))
  if (refused.length > 0)
    return `${refused.join(', ')} refused: only ${ASYMMETRIC_ALGORITHMS.join(', ')} (never none, never an HMAC)`
  return null
}
