// The top costs of a CPU profile (`npm run bench -- --only get --profile DIR`, then
// `node bench/profile-top.js DIR/*.cpuprofile [N]`): self time per function, and per place
// (the service's own code, SQLite through better-sqlite3, Fastify, Node's streams and sockets, ...).
import { readFileSync } from 'node:fs'

const PLACES = [
  ['garbage collection', /^\(garbage collector\)/],
  ['idle', /^\(idle\)/],
  [
    'Fastify and its plugins',
    /node_modules\/(fastify|@fastify|find-my-way|light-my-request|avvio|fast-json-stringify)/,
  ],
  ['pino (logging)', /node_modules\/pino/],
  ['other dependencies', /node_modules\//],
  ['the service (dist/, SQLite included: a statement counts in its caller)', /\bdist\//],
  ['the kernel: socket writes and syncs', /^(writeUtf8String|writeBuffer|writev|fdatasync|writeLatin1String)$/],
  ['Node (net, streams, http)', /^node:|^internal\//],
]

// Loading modules at start, not serving: left out of the shares.
const STARTUP =
  /^(wrapSafe|compileSourceTextModule|compileForInternalLoader|internalModuleStat|realpathSync|defaultLoadSync|readFileUtf8|stat) /

function placeOf(key) {
  for (const [name, pattern] of PLACES) if (pattern.test(key)) return name
  return 'native / other'
}

export function topCosts(profile, n = 15) {
  const self = new Map()
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const counts = new Map()
  for (const id of profile.samples) counts.set(id, (counts.get(id) ?? 0) + 1)
  let total = 0
  for (const [id, count] of counts) {
    const { callFrame } = byId.get(id)
    const where = callFrame.url
      ? `${callFrame.url.replace(/^file:\/\/.*?\/(dist|node_modules)\//, '$1/')}:${callFrame.lineNumber + 1}`
      : ''
    const key = `${callFrame.functionName || '(anonymous)'} ${where}`.trim()
    if (STARTUP.test(`${key} `)) continue
    self.set(key, (self.get(key) ?? 0) + count)
    total += count
  }
  const busy = total - (self.get('(idle)') ?? 0)
  const places = new Map()
  for (const [key, count] of self) places.set(placeOf(key), (places.get(placeOf(key)) ?? 0) + count)
  const share = (count) => `${((100 * count) / busy).toFixed(1)} %`
  return {
    functions: [...self]
      .filter(([key]) => key !== '(idle)')
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([key, count]) => [key, share(count)]),
    places: [...places]
      .filter(([key]) => key !== 'idle')
      .sort((a, b) => b[1] - a[1])
      .map(([key, count]) => [key, share(count)]),
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [file, n] = process.argv.slice(2)
  const { functions, places } = topCosts(JSON.parse(readFileSync(file, 'utf8')), Number(n ?? 15))
  process.stdout.write('share of busy time, by place:\n')
  for (const [key, value] of places) process.stdout.write(`  ${value.padStart(7)}  ${key}\n`)
  process.stdout.write('top functions (self time):\n')
  for (const [key, value] of functions) process.stdout.write(`  ${value.padStart(7)}  ${key}\n`)
}
