/** Why an authentication was refused: a closed set, so a count by reason stays bounded. */
export const AUTH_REFUSALS = [
  'missing',
  'malformed',
  'unknown',
  'expired',
  'revoked',
  'provider_token',
  'ticket',
  'blocked',
  'claim_refused',
  'keys_unavailable',
  'throttled',
] as const
export type AuthRefusal = (typeof AUTH_REFUSALS)[number]

const REFUSAL_BY_CODE: Record<string, AuthRefusal> = {
  FST_BEARER_AUTH_MISSING_AUTHORIZATION_HEADER: 'missing',
  FST_BEARER_AUTH_INVALID_AUTHORIZATION_HEADER: 'malformed',
  CLAIM_REFUSED: 'claim_refused',
  PROVIDER_KEYS_UNAVAILABLE: 'keys_unavailable',
  ACCOUNT_BLOCKED: 'blocked',
}

/** A rejected token says why in `refusal`; other errors by their code. */
export function refusalOf(error: Error): AuthRefusal {
  const { refusal, code } = error as { refusal?: AuthRefusal; code?: string }
  return refusal ?? REFUSAL_BY_CODE[code ?? ''] ?? 'unknown'
}
