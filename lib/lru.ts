/**
 * A small LRU (the print sandbox's compiled layouts, remembered inbox pages), bounded by entry count and by total weight (compiled layouts can be megabytes,
 * so a count alone would not bound memory).
 */
export interface Lru<V> {
  get(key: string): V | undefined
  set(key: string, value: V): void
  clear(): void
  readonly size: number
  /** The total weight of what is held. */
  readonly weight: number
}

export function createLru<V>(maxEntries: number, maxWeight: number, weigh: (value: V) => number): Lru<V> {
  const entries = new Map<string, { value: V; weight: number }>()
  let totalWeight = 0

  function remove(key: string): void {
    const entry = entries.get(key)
    if (!entry) return
    entries.delete(key)
    totalWeight -= entry.weight
  }

  function evict(): void {
    for (const key of entries.keys()) {
      if (entries.size <= maxEntries && totalWeight <= maxWeight) return
      remove(key)
    }
  }

  return {
    get(key) {
      const entry = entries.get(key)
      if (!entry) return undefined
      // Map keeps insertion order: re-inserting makes this the most recently used.
      entries.delete(key)
      entries.set(key, entry)
      return entry.value
    },
    set(key, value) {
      remove(key)
      const weight = weigh(value)
      entries.set(key, { value, weight })
      totalWeight += weight
      evict()
    },
    clear() {
      entries.clear()
      totalWeight = 0
    },
    get size() {
      return entries.size
    },
    get weight() {
      return totalWeight
    },
  }
}
