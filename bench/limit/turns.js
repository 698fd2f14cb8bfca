// The service against the database limit, in turns: both servers run at once, each on its own copy
// of the seeded file, and take the same scenario's load in short turns, service and limit
// alternately, the order reversed every round. Each server's CPU time in its own turn (its threads'
// schedstat, in ns) over the requests it answered is what one request cost it; the measure is the
// median of limit over service across the pairs of adjacent turns. Measured one after the other,
// minutes apart, the same server's CPU per request moved by up to 2x on this shared machine (the
// machine's state, not the code); in adjacent half-second turns both servers meet the same state.
import { load, probe } from '../load.js'
import { startLimit, startService } from '../processes.js'
import { scenarios } from '../scenarios.js'
import { medianOfPairs, microsPerRequest, playTurns } from '../turns.js'

const SIDES = ['service', 'limit']

/**
 * Runs `keys` (of get, list, create, patch) in turns on a service and a limit of their own;
 * `limitSeed` names the files (the limit's and the service's) seeded before any scenario wrote. Per scenario: each
 * side's CPU µs per request over all its turns, the median ratio of the pairs and its quartiles.
 */
export async function runLimitTurns({
  limitSeed,
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
  const servers = {
    service: await startService({ database: limitSeed.serviceDatabase, logLevel, nodeArgs }),
    limit: await startLimit({ database: limitSeed.database, tokens: limitSeed.tokens, nodeArgs }),
  }
  try {
    const rows = []
    for (const key of keys) {
      // One stream per side, kept over its turns: creates never reuse a bed on either side, and the
      // discharges run through the seeded pool on each side's own copy.
      const sideCtx = { ...ctx, patchPool: [...seeded.pool], templates: [] }
      const scenario = scenarios(sideCtx).find((s) => s.key === key)
      const nexts = { service: counted(scenario.make()), limit: counted(scenario.make()) }
      for (const side of SIDES) {
        await probe(servers[side].url, nexts[side])
        // A discharge's warm-up takes its ids from the pool the turns need: one second is enough.
        const warmup = key === 'patch' ? Math.min(1, loadOptions.warmup) : loadOptions.warmup
        await load(servers[side].url, nexts[side], { ...loadOptions, duration: warmup, warmup: 0 })
      }
      log(`  ${key}: ${rounds} rounds of a ${turnSeconds} s turn, service and limit`)
      const { totals, played } = await playTurns({
        sides: SIDES,
        servers,
        nexts,
        rounds,
        turnSeconds,
        connections: loadOptions.connections,
        stop: (sums) => runsOut(key, sideCtx.patchPool.length, nexts, sums),
      })
      rows.push({ key, title: scenario.title, rounds: played, ...summarize(totals) })
    }
    return rows
  } finally {
    await servers.service.stop()
    await servers.limit.stop()
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
 * Discharges use each seeded id once per side; the limit discharges some 12 000 a second, more than
 * the pool holds for 20 full turns. The rounds stop while a turn's worth and a half is left, so no
 * turn runs dry (the rounds played are reported).
 */
function runsOut(key, pool, nexts, totals) {
  if (key !== 'patch') return false
  return SIDES.some((side) => {
    const mostInATurn = Math.max(0, ...totals[side].turnRequests)
    return pool - nexts[side].made < 1.5 * mostInATurn + 1000
  })
}

function summarize(totals) {
  return {
    serviceMicros: microsPerRequest(totals.service),
    limitMicros: microsPerRequest(totals.limit),
    ...medianOfPairs(totals.limit, totals.service),
    requests: { service: totals.service.requests, limit: totals.limit.requests },
    non2xx: { service: totals.service.non2xx, limit: totals.limit.non2xx },
  }
}
