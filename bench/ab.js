// Two builds of the service in turns: `node bench/ab.js --base <git ref> [--only get,patch]
// [--rounds 20]` builds the base in a git worktree of its own (node_modules shared), seeds one file,
// starts each build on a copy of it with `npm start`'s flags, and loads them in alternate half-second
// turns, the order reversed every round (bench/turns.js). Printed per scenario: each build's CPU µs
// per request over its turns and the median, over the pairs of adjacent turns, of base over this
// tree's build (above 1: this tree is cheaper), with its quartiles. Builds this tree first.
import { execFileSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { load, probe } from './load.js'
import { ROOT, startService } from './processes.js'
import { scenarios } from './scenarios.js'
import { seedDatabase } from './seed.js'
import { medianOfPairs, microsPerRequest, playTurns } from './turns.js'

const { values: args } = parseArgs({
  options: {
    base: { type: 'string' },
    only: { type: 'string', default: 'get,patch,create' },
    rounds: { type: 'string', default: '20' },
    connections: { type: 'string', default: '50' },
  },
})
if (!args.base) {
  console.error('usage: node bench/ab.js --base <git ref> [--only get,list,create,patch] [--rounds N]')
  process.exit(2)
}

const work = mkdtempSync(join(tmpdir(), 'facility-ab-'))
const tree = join(work, 'base')
const run = (command, argv, cwd) => execFileSync(command, argv, { cwd, stdio: ['ignore', 'ignore', 'inherit'] })

try {
  run('npx', ['tsc', '-p', 'tsconfig.build.json'], ROOT)
  run('git', ['worktree', 'add', '--detach', tree, args.base], ROOT)
  symlinkSync(join(ROOT, 'node_modules'), join(tree, 'node_modules'))
  run('npx', ['tsc', '-p', 'tsconfig.build.json'], tree)
  const seeded = await seedDatabase(join(work, 'seed.db'), {
    occupants: 20_000,
    notifications: 20_000,
    patchPool: 300_000,
  })
  const copy = (name) => {
    const file = join(work, `${name}.db`)
    copyFileSync(join(work, 'seed.db'), file)
    return file
  }
  const connections = Number(args.connections)
  const servers = {
    base: await startService({ database: copy('base'), logLevel: 'warn', cwd: tree }),
    head: await startService({ database: copy('head'), logLevel: 'warn' }),
  }
  try {
    console.log(`base ${args.base} against this tree, ${args.rounds} rounds of 0.5 s turns, ${connections} connections`)
    for (const key of args.only.split(',')) {
      const ctx = { tokens: seeded.tokens, sample: seeded.sample, toMark: seeded.notifications.toMark, runId: 'ab' }
      // One pool for both: each takes its own ids, so no discharge repeats on either copy.
      const shared = { ...ctx, patchPool: [...seeded.pool], templates: [] }
      const scenario = scenarios(shared).find((s) => s.key === key)
      if (!scenario) throw new Error(`no scenario ${key}`)
      const nexts = { base: scenario.make(), head: scenario.make() }
      for (const side of ['base', 'head']) {
        await probe(servers[side].url, nexts[side])
        await load(servers[side].url, nexts[side], { connections, duration: 1, warmup: 0 })
      }
      const { totals, played } = await playTurns({
        sides: ['base', 'head'],
        servers,
        nexts,
        rounds: Number(args.rounds),
        turnSeconds: 0.5,
        connections,
      })
      const { ratio, quartiles } = medianOfPairs(totals.base, totals.head)
      const non2xx = totals.base.non2xx + totals.head.non2xx
      console.log(
        `${key}: base ${microsPerRequest(totals.base).toFixed(1)} µs, this tree ${microsPerRequest(totals.head).toFixed(1)} µs a request; base / this tree ${ratio.toFixed(2)} (quartiles ${quartiles.map((q) => q.toFixed(2)).join(' – ')}), ${played} rounds${non2xx ? `, ${non2xx} non-2xx` : ''}`,
      )
    }
  } finally {
    for (const server of Object.values(servers)) await server.stop()
  }
} finally {
  if (existsSync(tree)) run('git', ['worktree', 'remove', '--force', tree], ROOT)
  rmSync(work, { recursive: true, force: true })
}
