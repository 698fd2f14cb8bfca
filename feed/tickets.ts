import { createHash, randomBytes } from 'node:crypto'

export const TICKET_TTL_MS = 30_000
const MAX_OUTSTANDING = 10_000

function keyOf(ticket: string): string {
  return createHash('sha256').update(ticket).digest('base64')
}

/**
 * Short-lived, single-use stream tickets. A browser's EventSource cannot send an Authorization
 * header, and a token must never travel in a URL (it would end up in proxy logs and history), so a
 * page trades its token for a ticket that opens one stream within 30 s and is worthless after.
 * Tickets live in memory only (keyed by a hash, like tokens): a restart voids them, which costs a
 * client one more POST. The ticket names the token, so opening a stream re-checks that token.
 */
export class StreamTickets {
  private readonly outstanding = new Map<string, { tokenId: string; expiresAt: number }>()

  issue(tokenId: string, now = Date.now()): { ticket: string; expiresAt: number } {
    this.forgetExpired(now)
    // Bounded memory: past the cap the oldest outstanding ticket is dropped (Maps keep order).
    if (this.outstanding.size >= MAX_OUTSTANDING) {
      const oldest = this.outstanding.keys().next().value
      if (oldest !== undefined) this.outstanding.delete(oldest)
    }
    const ticket = `fst_${randomBytes(32).toString('base64url')}`
    const expiresAt = now + TICKET_TTL_MS
    this.outstanding.set(keyOf(ticket), { tokenId, expiresAt })
    return { ticket, expiresAt }
  }

  /** The token id the ticket was issued to, once: a used, unknown or expired ticket gives null. */
  redeem(ticket: string, now = Date.now()): string | null {
    const key = keyOf(ticket)
    const entry = this.outstanding.get(key)
    if (!entry) return null
    this.outstanding.delete(key)
    return entry.expiresAt > now ? entry.tokenId : null
  }

  private forgetExpired(now: number): void {
    for (const [key, entry] of this.outstanding) {
      if (entry.expiresAt > now) break // issued in order with one lifetime: the rest are newer
      this.outstanding.delete(key)
    }
  }
}
