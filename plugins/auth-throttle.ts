/**
 * Counts failed authentications per client address in fixed windows. Past the limit, the
 * address is refused (429) until its window ends, so guessing tokens costs real time.
 */
export class AuthThrottle {
  readonly #failures = new Map<string, { count: number; resetAt: number }>()

  constructor(
    readonly limit: number,
    readonly windowMs: number,
  ) {}

  /** Seconds until the address may try again, or 0 when it may try now. */
  retryAfter(address: string, now = Date.now()): number {
    const entry = this.#failures.get(address)
    if (!entry) return 0
    if (entry.resetAt <= now) {
      this.#failures.delete(address)
      return 0
    }
    return entry.count >= this.limit ? Math.ceil((entry.resetAt - now) / 1000) : 0
  }

  fail(address: string, now = Date.now()): void {
    const entry = this.#failures.get(address)
    if (entry && entry.resetAt > now) entry.count += 1
    else this.#failures.set(address, { count: 1, resetAt: now + this.windowMs })
    if (this.#failures.size > 10_000) this.#sweep(now)
  }

  // Bounds memory when many addresses fail once and never come back.
  #sweep(now: number): void {
    for (const [address, entry] of this.#failures) if (entry.resetAt <= now) this.#failures.delete(address)
  }
}
