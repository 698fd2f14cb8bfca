import fc from 'fast-check'

/**
 * Queries drawn part by part (a filter, a sort, a limit, a skip ...), and pairs of them that differ
 * in one part only, or in the caller only. A remembered page keyed without one part is then found
 * by the pairs that differ in that part: each pair asks both queries in the same state, so the page
 * remembered for one would answer the other.
 */
export type QueryParts = Record<string, readonly string[]>

export interface DrawnQuery {
  caller: number
  /** The chosen value's index, per part. */
  choice: Record<string, number>
}

export function queryText(parts: QueryParts, query: DrawnQuery): string {
  return Object.keys(parts)
    .map((part) => (parts[part] as readonly string[])[query.choice[part] as number])
    .filter((text) => text !== '')
    .join('&')
}

export function queryArbitrary(parts: QueryParts, callers: number): fc.Arbitrary<DrawnQuery> {
  const choice = Object.fromEntries(
    Object.entries(parts).map(([part, values]) => [part, fc.nat(values.length - 1)] as const),
  )
  return fc.record({ caller: fc.nat(callers - 1), choice: fc.record(choice) })
}

/** Two queries that differ in one part (or in the caller): which one is drawn too. */
export function queryPairArbitrary(parts: QueryParts, callers: number): fc.Arbitrary<[DrawnQuery, DrawnQuery]> {
  const names = [...Object.keys(parts), 'caller']
  return fc
    .tuple(queryArbitrary(parts, callers), fc.constantFrom(...names), fc.nat())
    .map(([first, part, value]): [DrawnQuery, DrawnQuery] => {
      if (part === 'caller') return [first, { ...first, caller: value % callers }]
      const values = parts[part] as readonly string[]
      return [first, { ...first, choice: { ...first.choice, [part]: value % values.length } }]
    })
}
