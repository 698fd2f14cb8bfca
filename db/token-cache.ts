import * as crypto from 'node:crypto'
import type { Database } from 'better-sqlite3'
import { type Principal, tokenRefusal } from '../domain/principal.js'
import { dataVersionOf } from './data-version.js'
import type { TokenCheck, TokenRepository } from './repositories/tokens.js'

const MAX_ENTRIES = 10_000

// The one-shot hash (Node 20.12+) is cheaper than a Hash object per request.
const sha256: (text: string) => string =
  /* c8 ignore next 3: older Node 20 releases lack crypto.hash */
  typeof crypto.hash === 'function'
    ? (text) => crypto.hash('sha256', text, 'base64')
    : (text) => crypto.createHash('sha256').update(text).digest('base64')

/**
 * Accepted tokens, remembered while the database has not changed, so a request costs one cheap
 * read (PRAGMA data_version) instead of a token lookup. data_version changes whenever another
 * connection commits (the CLI creating or revoking a token); this connection changes tokens only
 * through the repository, whose create and revoke clear the cache. So a revocation still counts on
 * the very next request, and an expiry is checked on every request. The cache is keyed by a
 * SHA-256 of the token, never the token itself; refused tokens are not remembered.
 */
export function withTokenCache(db: Database, tokens: TokenRepository): TokenRepository {
  const dataVersion = dataVersionOf(db)
  const accepted = new Map<string, { principal: Principal; expiresAt: number | null }>()
  let version: number | undefined

  function check(token: string, now = Date.now()): TokenCheck {
    const current = dataVersion()
    if (current !== version) {
      accepted.clear()
      version = current
    }
    const key = sha256(token)
    const known = accepted.get(key)
    if (known) {
      if (tokenRefusal({ revokedAt: null, expiresAt: known.expiresAt }, now) !== null)
        return { ok: false, reason: 'expired' }
      return { ok: true, principal: known.principal }
    }
    const result = tokens.check(token, now)
    const info = result.ok ? tokens.get(result.principal.tokenId) : undefined
    if (result.ok && info) {
      if (accepted.size >= MAX_ENTRIES) accepted.clear()
      accepted.set(key, { principal: Object.freeze(result.principal), expiresAt: info.expiresAt })
    }
    return result
  }

  return {
    ...tokens,
    check,
    // A read of its own (a stream's ticket, the feed's token check): the turn's read snapshot must
    // be the file's before it reads (db/data-version.ts).
    get(...args: Parameters<TokenRepository['get']>) {
      dataVersion()
      return tokens.get(...args)
    },
    create(...args: Parameters<TokenRepository['create']>) {
      accepted.clear()
      return tokens.create(...args)
    },
    revoke(...args: Parameters<TokenRepository['revoke']>) {
      accepted.clear()
      return tokens.revoke(...args)
    },
  }
}
