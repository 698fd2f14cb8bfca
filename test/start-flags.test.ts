import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { runInNewContext } from 'node:vm'
import t from 'tap'
import { PROJECT_ROOT } from '../lib/product-files.js'
import { releaseStartGarbage } from '../lib/start-garbage.js'

/** Node's flags of `npm start`, which the bench and the release executable take from there too. */
function startFlags(): string[] {
  const { scripts } = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8'))
  return String(scripts.start)
    .split(' ')
    .filter((word) => word.startsWith('--'))
}

const heapOf = (flags: string[]) =>
  JSON.parse(
    execFileSync(process.execPath, [...flags, '-p', 'JSON.stringify(require("v8").getHeapStatistics())'], {
      encoding: 'utf8',
    }),
  ) as { heap_size_limit: number }

// The old generation's limit is what makes V8 collect it at ~1.6x the live heap instead of up to
// 4x on a machine with much memory (docs/OPERATIONS.md, "Memory").
t.test('the server starts with a young generation of 2 x 4 MB and an old generation of 1 GiB', async (t) => {
  const flags = startFlags()
  t.ok(flags.includes('--max-semi-space-size=4'), flags.join(' '))
  // One V8 helper thread: 3–5 MB less at idle, the same CPU per request in the bench (PERFORMANCE.md).
  t.ok(flags.includes('--v8-pool-size=1'), flags.join(' '))
  // V8's mid-tier compiler stays on: without it the ADT feed cost 25–40 % more CPU (DECISIONS.md).
  t.notOk(flags.includes('--no-maglev'), flags.join(' '))
  const limitMb = heapOf(flags).heap_size_limit / 2 ** 20
  t.ok(limitMb >= 1024 && limitMb < 1100, `heap limit ${limitMb} MB`)
})

// glibc reads MALLOC_ARENA_MAX once, before Node starts: it can only come from the environment, so
// `npm start` sets it before `node` and the release's unit sets it for the executable
// (docs/DECISIONS.md, "Node's flags in `npm start`").
t.test('npm start and the release unit both give the server two malloc pools', async (t) => {
  const { scripts } = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8'))
  const words = String(scripts.start).split(' ')
  t.same(words.slice(0, words.indexOf('node')), ['MALLOC_ARENA_MAX=2'], String(scripts.start))
  const unit = readFileSync(join(PROJECT_ROOT, 'scripts', 'release', 'facility-service.service'), 'utf8')
  t.match(unit, /^Environment=MALLOC_ARENA_MAX=2$/m)
})

// The start's garbage collection borrows V8's gc function: nothing keeps it afterwards.
t.test('giving back start-up garbage leaves no gc function to anyone', async (t) => {
  releaseStartGarbage()
  t.equal(typeof (globalThis as { gc?: unknown }).gc, 'undefined', 'not on the global')
  t.equal(runInNewContext('typeof gc'), 'undefined', 'nor in a context made afterwards (a worker, a sandbox)')
})
