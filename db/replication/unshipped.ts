/** Beyond this many unshipped commits (a long outage), only the oldest and the newest matter. */
const MOST = 100_000

/**
 * The times of the commits not yet known to be on the replica, oldest first: the age of the
 * oldest is the replication lag /health shows. Litestream says when it began reading what it
 * shipped; every commit before that is taken as shipped.
 */
export class Unshipped {
  private times: number[] = []
  private head = 0

  /** A commit at `at` (ms since the epoch). */
  note(at: number): void {
    if (this.times.length - this.head < MOST) this.times.push(at)
    else this.times[this.times.length - 1] = at
  }

  /** Litestream shipped everything committed up to `upTo`. */
  shipped(upTo: number): void {
    while (this.head < this.times.length && (this.times[this.head] as number) <= upTo) this.head++
    // Drop what was shipped now and then, not on every call (a copy each time would be quadratic).
    if (this.head > 1024 && this.head * 2 > this.times.length) {
      this.times = this.times.slice(this.head)
      this.head = 0
    }
  }

  /** How long the oldest commit not on the replica has waited; 0 when it has them all. */
  lagMs(now: number): number {
    const oldest = this.times[this.head]
    return oldest === undefined ? 0 : Math.max(0, now - oldest)
  }
}
