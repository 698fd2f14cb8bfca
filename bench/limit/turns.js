// The service against the database limit and the Feathers peer, in turns: the servers run at once,
// each on its own copy of the seeded rows, and take the same scenario's load in short turns, one
// after the other, the order reversed every round. The service's turn sits between the other two
// (limit, service, peer; then peer, service, limit), so each of its turns is adjacent to one of the
// limit's and one of the peer's. Each server's CPU time in its own turn (its threads' schedstat, in
// ns) over the requests it answered is what one request cost it; the measures are the medians, over
// the pairs of adjacent turns, of limit over service and of peer over service. Measured one after
// the other, minutes apart, the same server's CPU per request moved by up to 2x on this shared
// machine (the machine's state, not the code); in adjacent half-second turns they meet the same state.
import { load, probe } from '../load.js'
import { startLimit, startPeer, startService } from '../processes.js'
import { scenarios } from '../scenarios.js'
import { medianOfPairs, medianOfRatePairs, microsPerRequest, playTurns } from '../turns.js'

/**
 * Runs `keys` (of get, list, create, patch) in turns on a service and a limit of their own, and on
 * the Feathers peer when `peerDatabase` names its copy (none with --no-peer); `limitSeed` names the
 * files (the limit's and the service's) seeded before any scenario wrote. Per scenario: each side's
 * CPU µs per request over all its turns, the median ratio of the pairs and its quartiles. Also the
 * peer's peak resident set over all its turns.
 */
export async function runLimitTurns({
  limitSeed,
  peerDatabase,
  seeded,
  ctx,
  keys,
  loadOptions,
  log,
  logLevel = 'warn',
  nodeArgs = [],
  rounds = 20,
  turnSeconds = 0.5,
}) {
  const sides = peerDatabase ? ['limit', 'service', 'peer'] : ['limit', 'service']
  const servers = {
    service: await startService({ database: limitSeed.serviceDatabase, logLevel, nodeArgs }),
    limit: await startLimit({ database: limitSeed.database, tokens: limitSeed.tokens, nodeArgs }),
  }
  if (peerDatabase) servers.peer = await startPeer({ database: peerDatabase })
  try {
    const rows = []
    for (const key of keys) {
      // One stream per side, kept over its turns: creates never reuse a bed on any side, and the
      // discharges run through the seeded pool on each side's own copy.
      const sideCtx = { ...ctx, patchPool: [...seeded.pool], templates: [] }
      const scenario = scenarios(sideCtx).find((s) => s.key === key)
      const nexts = Object.fromEntries(sides.map((side) => [side, counted(scenario.make())]))
      for (const side of sides) {
        await probe(servers[side].url, nexts[side])
        // A discharge's warm-up takes its ids from the pool the turns need: one second is enough.
        const warmup = key === 'patch' ? Math.min(1, loadOptions.warmup) : loadOptions.warmup
        await load(servers[side].url, nexts[side], { ...loadOptions, duration: warmup, warmup: 0 })
      }
      log(`  ${key}: ${rounds} rounds of a ${turnSeconds} s turn, ${sides.join(', ')}`)
      const { totals, played } = await playTurns({
        sides,
        servers,
        nexts,
        rounds,
        turnSeconds,
        connections: loadOptions.connections,
        stop: (sums) => runsOut(key, sideCtx.patchPool.length, sides, nexts, sums),
      })
      rows.push({ key, title: scenario.title, rounds: played, ...summarize(totals) })
    }
    return { rows, peerPeakRss: servers.peer?.peakRss() ?? 0 }
  } finally {
    for (const side of sides) await servers[side].stop()
  }
}

/** A request maker that counts what it made. */
function counted(next) {
  const wrapped = () => {
    wrapped.made++
    return next()
  }
  wrapped.made = 0
  return wrapped
}

/**
 * Discharges use each seeded id once per side (each side walks the pool on its own copy); the limit
 * discharges some 13 000-15 000 in a turn (the default pool of 300 000 holds 17-20 rounds). The rounds stop
 * while every side has a turn's worth and a half left, so no turn runs dry (the rounds played are reported).
 */
function runsOut(key, pool, sides, nexts, totals) {
  if (key !== 'patch') return false
  return sides.some((side) => {
    const mostInATurn = Math.max(0, ...totals[side].turnRequests)
    return pool - nexts[side].made < 1.5 * mostInATurn + 1000
  })
}

function summarize(totals) {
  const { service, limit, peer } = totals
  const row = {
    serviceMicros: microsPerRequest(service),
    limitMicros: microsPerRequest(limit),
    ...medianOfPairs(limit, service),
    requests: { service: service.requests, limit: limit.requests },
    non2xx: { service: service.non2xx, limit: limit.non2xx },
  }
  if (!peer) return row
  row.peer = {
    micros: microsPerRequest(peer),
    ...medianOfPairs(peer, service),
    throughput: medianOfRatePairs(service, peer),
    requests: peer.requests,
    non2xx: peer.non2xx,
  }
  return row
}
