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

const SIDES = ['service', 'limit']

async function turn(server, side, next, totals, { connections, seconds }) {
  const before = server.cpuNanos()
  const result = await load(server.url, next, { connections, duration: seconds, warmup: 0 })
  const used = server.cpuNanos() - before
  const sum = totals[side]
  sum.nanos += used
  sum.requests += result.total
  sum.non2xx += result.non2xx + result.errors
  sum.turns.push(used / Math.max(1, result.total) / 1000)
  sum.turnRequests.push(result.total)
}

/**
 * Runs `keys` (of get, list, create, patch) in turns on a service and a limit of their own;
 * `serviceDatabase` and `limitSeed` are files seeded before any scenario wrote. Per scenario: each
 * side's CPU µs per request over all its turns, the median ratio of the pairs and its quartiles.
 */
export async function runLimitTurns({
  serviceDatabase,
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
    service: await startService({ database: serviceDatabase, logLevel, nodeArgs }),
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
      const totals = Object.fromEntries(
        SIDES.map((side) => [side, { nanos: 0, requests: 0, non2xx: 0, turns: [], turnRequests: [] }]),
      )
      for (const side of SIDES) {
        await probe(servers[side].url, nexts[side])
        // A discharge's warm-up takes its ids from the pool the turns need: one second is enough.
        const warmup = key === 'patch' ? Math.min(1, loadOptions.warmup) : loadOptions.warmup
        await load(servers[side].url, nexts[side], { ...loadOptions, duration: warmup, warmup: 0 })
      }
      log(`  ${key}: ${rounds} rounds of a ${turnSeconds} s turn, service and limit`)
      let played = 0
      for (; played < rounds && !runsOut(key, sideCtx.patchPool.length, nexts, totals); played++) {
        const round = played
        const order = round % 2 === 0 ? SIDES : [...SIDES].reverse()
        for (const side of order)
          await turn(servers[side], side, nexts[side], totals, {
            connections: loadOptions.connections,
            seconds: turnSeconds,
          })
      }
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
  const perRequest = (side) => totals[side].nanos / Math.max(1, totals[side].requests) / 1000
  const ratios = totals.limit.turns.map((limit, i) => limit / totals.service.turns[i]).sort((a, b) => a - b)
  const quartile = (q) => ratios[Math.min(ratios.length - 1, Math.floor(q * ratios.length))]
  return {
    serviceMicros: perRequest('service'),
    limitMicros: perRequest('limit'),
    ratio: quartile(0.5),
    quartiles: [quartile(0.25), quartile(0.75)],
    requests: { service: totals.service.requests, limit: totals.limit.requests },
    non2xx: { service: totals.service.non2xx, limit: totals.limit.non2xx },
  }
}
