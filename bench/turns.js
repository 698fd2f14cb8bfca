// Two servers (or two copies of one) loaded in alternate short turns, the order reversed every
// round: each side's CPU time in its own turn over the requests it answered is what a request cost
// it, under the same machine state as the other side's adjacent turn. Used by the cost of the
// metrics (bench/metrics-cost.js), the database limit (bench/limit/turns.js) and the ADT feed
// against its floor (bench/adt.js, over MLLP).
import { load } from './load.js'

/**
 * Plays up to `rounds` rounds over `sides` (two names); `servers[side]` has `cpuNanos()`. An HTTP
 * side has a `url` loaded by autocannon with `connections` from `nexts[side]`, its request maker; a
 * side of another protocol brings `runTurns[side](seconds)`, which sends for that long and answers
 * `{ total, non2xx, errors }` as a load does. `stop(totals)`, asked before each round, ends the
 * rounds early; `refuse(side, result)` may throw on a turn's answers. Returns each side's totals
 * and the rounds played.
 */
export async function playTurns({ sides, servers, nexts, runTurns, rounds, turnSeconds, connections, stop, refuse }) {
  const turnOf = (side) =>
    runTurns?.[side] ??
    ((seconds) => load(servers[side].url, nexts[side], { connections, duration: seconds, warmup: 0 }))
  const totals = Object.fromEntries(
    sides.map((side) => [side, { nanos: 0, requests: 0, non2xx: 0, turns: [], turnRequests: [] }]),
  )
  let played = 0
  for (; played < rounds && !stop?.(totals); played++) {
    const order = played % 2 === 0 ? sides : [...sides].reverse()
    for (const side of order) {
      const server = servers[side]
      const before = server.cpuNanos()
      const result = await turnOf(side)(turnSeconds)
      const used = server.cpuNanos() - before
      refuse?.(side, result)
      const sum = totals[side]
      sum.nanos += used
      sum.requests += result.total
      sum.non2xx += result.non2xx + result.errors
      sum.turns.push(used / Math.max(1, result.total) / 1000)
      sum.turnRequests.push(result.total)
    }
  }
  return { totals, played }
}

/** CPU µs per request of a side over all its turns. */
export const microsPerRequest = (sum) => sum.nanos / Math.max(1, sum.requests) / 1000

/**
 * The ratio of each pair of adjacent turns, `over` to `under`: their median is the measure (a turn
 * that took a full garbage collection or a checkpoint weighs on the totals, not on a median), the
 * quartiles say how far pairs stray.
 */
export function medianOfPairs(over, under) {
  const ratios = over.turns.map((value, i) => value / under.turns[i]).sort((a, b) => a - b)
  const quartile = (q) => ratios[Math.min(ratios.length - 1, Math.floor(q * ratios.length))]
  return { ratio: quartile(0.5), quartiles: [quartile(0.25), quartile(0.75)] }
}

/**
 * The same median over each side's requests a turn: turns last equally long, so two adjacent turns'
 * requests compare as their rates do (`over` answered that many times `under`'s requests).
 */
export const medianOfRatePairs = (over, under) =>
  medianOfPairs({ turns: over.turnRequests }, { turns: under.turnRequests })
