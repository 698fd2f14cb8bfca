import * as crypto from 'node:crypto'
import { decodeProtectedHeader, errors, jwtVerify } from 'jose'
import { type ClaimRules, principalFromClaims, scopesFromClaims } from '../../domain/claims.js'
import { PROVIDER_ACCOUNT_PREFIX, type Principal, providerAccount } from '../../domain/principal.js'
import { lifetimeRefusal } from '../../domain/token-lifetime.js'
import { createLru } from '../../lib/lru.js'
import { type KeyStamp, NoKeysError, type ProviderKeys } from './key-set.js'

export interface ProviderTokenOptions {
  issuer: string
  audience: string
  algorithms: string[]
  clockSkewSeconds: number
  /** OIDC_MAX_TOKEN_LIFETIME_SECONDS. */
  maxLifetimeSeconds: number
  rules: ClaimRules
  /** Verified tokens remembered (OIDC_TOKEN_MEMORY); 0 verifies every request. */
  memory: number
}

export type ProviderCheck =
  | { ok: true; principal: Principal; expiresAt: number }
  /** 401: not a token of the provider for this API, or no longer valid. */
  | { ok: false; status: 401; message: string }
  /** 403: an authentic token whose claims give no account, role or facility. */
  | { ok: false; status: 403; message: string }
  /** 503: no key to check it with (the provider never reached, no OIDC_JWKS_FILE). */
  | { ok: false; status: 503; message: string }

/** A person known from a verified token, for stream tickets and open streams (feed/). */
export interface ProviderSession {
  principal: Principal
  /** The expiry of the person's newest token (the latest of them while they say the same). */
  expiresAt: number
}

/** What was verified, and with which key material: checked again when the key set changes. */
interface Verified {
  principal: Principal
  expiresAt: number
  kid: string | undefined
  stamp: KeyStamp
}

interface Session extends ProviderSession, Verified {
  /** `iat` of the newest token (the time it was verified, without `iat`): an older one changes nothing. */
  issuedAt: number
}

const samePrincipal = (a: Principal, b: Principal) => a.role === b.role && a.facility === b.facility

/**
 * The token id of a provider principal is its account (`oidc:<claim value>`): one per person, so
 * renewing a token keeps its tickets, streams and Idempotency-Keys. Service token ids are hex.
 */
export const PROVIDER_TOKEN_PREFIX = PROVIDER_ACCOUNT_PREFIX

const sha256 = (text: string) => crypto.hash('sha256', text, 'base64')

function reasonOf(error: unknown): string {
  if (error instanceof errors.JWTExpired) return 'the bearer token has expired'
  if (error instanceof errors.JWTClaimValidationFailed) return `the bearer token is not valid: ${error.message}`
  if (error instanceof errors.JOSEAlgNotAllowed) return 'the bearer token is not valid: its algorithm is not allowed'
  if (error instanceof errors.JWKSNoMatchingKey)
    return "the bearer token is not valid: no provider key matches its 'kid'"
  return 'the bearer token is not valid'
}

/** People whose session (their latest token's expiry) is kept whatever OIDC_TOKEN_MEMORY says. */
const MIN_SESSIONS = 100_000

/**
 * Access tokens of the hospital's identity provider: the signature against the provider's keys,
 * `iss` exactly, `aud`, `exp` and `nbf` (with a small clock skew), the lifetime and `iat`
 * (domain/token-lifetime.ts), then the claims (domain/claims.ts).
 * A signature check costs more than the rest of a read, so verified tokens are remembered, keyed by
 * a hash (never the token), until they expire; refused ones never are.
 */
export function createProviderTokens(keys: ProviderKeys, opts: ProviderTokenOptions) {
  const verified = createLru<Verified>(Math.max(opts.memory, 1), Infinity, () => 0)
  // The people with a live token (what their streams and tickets are checked against), apart from
  // the memory of verified tokens: turning that memory off, or more people than it holds, must not
  // end anyone's stream. A session is a few hundred bytes.
  const sessions = createLru<Session>(Math.max(opts.memory, MIN_SESSIONS), Infinity, () => 0)
  const skewMs = opts.clockSkewSeconds * 1000

  /** Whether the key that verified it is still published; a refresh that dropped or changed it ends it. */
  function stillSigned(entry: Verified): boolean {
    if (entry.stamp.generation === keys.generation) return true
    const now = keys.stampOf(entry.kid)
    if (now === null || now.keys !== entry.stamp.keys) return false
    entry.stamp = now
    return true
  }

  function remembered(token: string, now: number): ProviderCheck | null {
    if (opts.memory === 0) return null
    const known = verified.get(sha256(token))
    // A key withdrawn since: verified again (and refused, unless the key came back).
    if (known === undefined || !stillSigned(known)) return null
    if (known.expiresAt + skewMs <= now) return { ok: false, status: 401, message: 'the bearer token has expired' }
    return { ok: true, principal: known.principal, expiresAt: known.expiresAt }
  }

  /** The person's session after this token: an older token than the one it holds changes nothing. */
  function keepSession(token: Verified, issuedAt: number, now: number): void {
    const id = token.principal.tokenId
    const current = sessions.get(id)
    const live = current !== undefined && current.expiresAt + skewMs > now && stillSigned(current)
    if (live && issuedAt < current.issuedAt) return
    const expiresAt =
      live && samePrincipal(current.principal, token.principal)
        ? Math.max(token.expiresAt, current.expiresAt)
        : token.expiresAt
    sessions.set(id, { ...token, expiresAt, issuedAt })
  }

  async function check(token: string, now = Date.now()): Promise<ProviderCheck> {
    keys.freshen(now)
    const known = remembered(token, now)
    if (known !== null) return known
    let header: ReturnType<typeof decodeProtectedHeader>
    try {
      header = decodeProtectedHeader(token)
    } catch {
      return { ok: false, status: 401, message: 'the bearer token is malformed' }
    }
    // Before any key is looked up: `none` and HMAC never reach a verification (lib/jwt-algorithms.ts).
    if (typeof header.alg !== 'string' || !opts.algorithms.includes(header.alg))
      return { ok: false, status: 401, message: 'the bearer token is not valid: its algorithm is not allowed' }
    const used: { stamp?: KeyStamp } = {}
    let payload: Record<string, unknown>
    try {
      ;({ payload } = await jwtVerify(
        token,
        async (protectedHeader, jws) => {
          const found = await keys.keyFor(protectedHeader, jws)
          used.stamp = found.stamp
          return found.key
        },
        {
          issuer: opts.issuer,
          audience: opts.audience,
          algorithms: opts.algorithms,
          clockTolerance: opts.clockSkewSeconds,
          requiredClaims: ['exp'],
          currentDate: new Date(now),
        },
      ))
    } catch (error) {
      if (error instanceof NoKeysError) return { ok: false, status: 503, message: error.message }
      return { ok: false, status: 401, message: reasonOf(error) }
    }
    const times = lifetimeRefusal(payload as { exp: number; iat?: unknown }, now, {
      maxLifetimeSeconds: opts.maxLifetimeSeconds,
      clockSkewSeconds: opts.clockSkewSeconds,
    })
    if (times !== null) return { ok: false, status: 401, message: `the bearer token is not valid: ${times}` }
    const outcome = principalFromClaims(payload, opts.rules)
    if (!outcome.ok) return { ok: false, status: 403, message: outcome.refusal.message }
    const account = providerAccount(outcome.principal.account)
    const scopes = Object.freeze(scopesFromClaims(payload))
    const principal = Object.freeze({ ...outcome.principal, scopes, tokenId: account, account })
    const expiresAt = (payload.exp as number) * 1000
    const entry: Verified = { principal, expiresAt, kid: header.kid, stamp: used.stamp as KeyStamp }
    if (opts.memory > 0) verified.set(sha256(token), { ...entry })
    keepSession(entry, typeof payload.iat === 'number' ? payload.iat * 1000 : now, now)
    return { ok: true, principal, expiresAt }
  }

  return {
    check,
    /** The person behind a provider token id, while their newest token is unexpired and its key published. */
    session(tokenId: string, now = Date.now()): ProviderSession | undefined {
      // An open stream brings no token: its checks keep the keys' age too, so a withdrawn key ends it.
      keys.freshen(now)
      const session = sessions.get(tokenId)
      return session && session.expiresAt + skewMs > now && stillSigned(session) ? session : undefined
    },
    status: () => keys.status(),
    /** The provider's discovery document, checked; rejects when it cannot be read. */
    discovery: () => keys.discovery(),
    refreshKeys: () => keys.refresh(),
  }
}

export type ProviderTokens = ReturnType<typeof createProviderTokens>
