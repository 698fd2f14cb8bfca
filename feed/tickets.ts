import { createHash, randomBytes } from 'node:crypto'

export const TICKET_TTL_MS = 30_000
/**
 * Unused, unexpired tickets one token may hold: one a second for a ticket's whole life, more than
 * any page needs (it asks for one per connection and uses it at once).
 */
export const MAX_TICKETS_PER_TOKEN = 30

export type Issued = { ticket: string; expiresAt: number } | { refused: true; retryAfterMs: number }

interface Outstanding {
  tokenId: string
  expiresAt: number
}

function keyOf(ticket: string): string {
  return createHash('sha256').update(ticket).digest('base64')
}

/**
 * Short-lived, single-use stream tickets. A browser's EventSource cannot send an Authorization
 * header, and a token must never travel in a URL (it would end up in proxy logs and history), so a
 * page trades its token for a ticket that opens one stream within 30 s and is worthless after.
 * Tickets live in memory only (keyed by a hash, like tokens): a restart voids them, which costs a
 * client one more POST. The ticket names the token, so opening a stream re-checks that token.
 *
 * Memory is bounded per token, never in all: a token past its cap is refused a new ticket (and
 * told when its oldest expires), and no token's request can drop another token's ticket, so a
 * flood from one token cannot void the tickets of the others. In all it is at most the cap times
 * the tokens in use, and tokens are made by administrators.
 */
export class StreamTickets {
  // In issue order: with one lifetime for all, the oldest expire first.
  private readonly outstanding = new Map<string, Outstanding>()
  // Each token's outstanding tickets, in issue order too.
  private readonly byToken = new Map<string, Set<string>>()

  issue(tokenId: string, now = Date.now()): Issued {
    this.forgetExpired(now)
    const held = this.byToken.get(tokenId) ?? new Set<string>()
    if (held.size >= MAX_TICKETS_PER_TOKEN) {
      const oldest = this.outstanding.get(held.values().next().value as string) as Outstanding
      return { refused: true, retryAfterMs: oldest.expiresAt - now }
    }
    const ticket = `fst_${randomBytes(32).toString('base64url')}`
    const expiresAt = now + TICKET_TTL_MS
    const key = keyOf(ticket)
    this.outstanding.set(key, { tokenId, expiresAt })
    held.add(key)
    this.byToken.set(tokenId, held)
    return { ticket, expiresAt }
  }

  /** The token id the ticket was issued to, without using it up; null for a used, unknown or expired one. */
  peek(ticket: string, now = Date.now()): string | null {
    const entry = this.outstanding.get(keyOf(ticket))
    return entry && entry.expiresAt > now ? entry.tokenId : null
  }

  /** The token id the ticket was issued to, once: a used, unknown or expired ticket gives null. */
  redeem(ticket: string, now = Date.now()): string | null {
    const key = keyOf(ticket)
    const entry = this.outstanding.get(key)
    if (!entry) return null
    this.forget(key, entry)
    return entry.expiresAt > now ? entry.tokenId : null
  }

  private forget(key: string, entry: Outstanding): void {
    this.outstanding.delete(key)
    const held = this.byToken.get(entry.tokenId)
    held?.delete(key)
    if (held?.size === 0) this.byToken.delete(entry.tokenId)
  }

  private forgetExpired(now: number): void {
    for (const [key, entry] of this.outstanding) {
      if (entry.expiresAt > now) break // issued in order with one lifetime: the rest are newer
      this.forget(key, entry)
    }
  }
}
