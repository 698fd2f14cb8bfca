const MAX_KEYS = 10_000

/**
 * Counts failed authentications per key (a client address, or a known token id presented with a
 * wrong secret) in fixed windows. It is consulted only for requests that have already failed: a
 * request whose credentials are valid never asks it, so failures can slow down only more failures,
 * never lock out a valid token (docs/SECURITY.md).
 */
export class AuthThrottle {
  readonly #failures = new Map<string, { count: number; resetAt: number }>()

  constructor(
    readonly limit: number,
    readonly windowMs: number,
  ) {}

  /** Seconds until the keys' windows end when any of them is over the limit, else 0. */
  retryAfter(keys: readonly string[], now = Date.now()): number {
    let wait = 0
    for (const key of keys) {
      const entry = this.#failures.get(key)
      if (!entry) continue
      if (entry.resetAt <= now) this.#failures.delete(key)
      else if (entry.count >= this.limit) wait = Math.max(wait, Math.ceil((entry.resetAt - now) / 1000))
    }
    return wait
  }

  /** Counts one failure against each key; returns the keys that have just reached the limit. */
  fail(keys: readonly string[], now = Date.now()): string[] {
    const reached: string[] = []
    for (const key of keys) {
      let entry = this.#failures.get(key)
      if (entry && entry.resetAt > now) entry.count += 1
      else {
        entry = { count: 1, resetAt: now + this.windowMs }
        this.#failures.delete(key)
        this.#failures.set(key, entry)
      }
      if (entry.count === this.limit) reached.push(key)
    }
    if (this.#failures.size > MAX_KEYS) this.#sweep(now)
    return reached
  }

  // Bounds memory when many addresses fail once and never come back: expired windows go first,
  // then the oldest windows (a Map iterates in insertion order, and every new window is appended).
  #sweep(now: number): void {
    for (const [key, entry] of this.#failures) if (entry.resetAt <= now) this.#failures.delete(key)
    for (const key of this.#failures.keys()) {
      if (this.#failures.size <= MAX_KEYS) break
      this.#failures.delete(key)
    }
  }
}
