// What a print worker holds of its engine's WebAssembly memory (issue: peak memory): one typical
// print layout rendered N times in one render worker, then the resident size of every WebAssembly
// memory in the process as the kernel counts it (/proc/self/smaps, Linux only) and the process's
// VmRSS. Needs dist/ (`npm run build`); `node bench/sandbox-memory.js [--renders N]`.
// docs/PERFORMANCE.md, "Other benchmarks".
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { createRenderer } from '../dist/render/sandbox.js'
import { LAYOUTS, record } from './print-sample.js'

const { values: args } = parseArgs({ options: { renders: { type: 'string', default: '200' } } })
const RENDERS = Number(args.renders)
const LIMITS = { timeoutMs: 1000, memoryMb: 32, maxOutputBytes: 2_097_152 }
const REPORT_AT = new Set([1, 2, 10, RENDERS])

function field(entry, name) {
  return Number(entry.match(new RegExp(`^${name}:\\s+(\\d+)`, 'm'))?.[1] ?? 0)
}

/**
 * V8 reserves a WebAssembly memory's whole address range and opens only its current size: an
 * anonymous read-write mapping followed at once by a reserved (---p) one of gigabytes.
 */
function wasmMemories() {
  const entries = readFileSync('/proc/self/smaps', 'utf8').split(/\n(?=[0-9a-f]+-[0-9a-f]+ )/)
  const found = { count: 0, sizeKb: 0, residentKb: 0, hugeKb: 0 }
  for (let i = 0; i + 1 < entries.length; i++) {
    const open = entries[i].split('\n')[0].trim().split(/\s+/)
    const reserved = entries[i + 1].split('\n')[0].trim().split(/\s+/)
    const adjacent = open[0].split('-')[1] === reserved[0].split('-')[0]
    if (open.length !== 5 || open[1] !== 'rw-p' || reserved[1] !== '---p' || !adjacent) continue
    if (field(entries[i + 1], 'Size') < 4 * 1024 * 1024) continue
    found.count++
    found.sizeKb += field(entries[i], 'Size')
    found.residentKb += field(entries[i], 'Rss')
    found.hugeKb += field(entries[i], 'AnonHugePages')
  }
  return found
}

const vmRss = () => Number(readFileSync('/proc/self/status', 'utf8').match(/VmRSS:\s+(\d+)/)?.[1])

const renderer = createRenderer(LIMITS, { maxConcurrent: 1, compilerIdleMs: 1 })
const job = { engine: 'pug', source: LAYOUTS.pug, cacheKey: 'bench:memory:pug', data: record }
const before = vmRss()
console.log(`node ${process.version}, one render worker, ${RENDERS} renders of bench/sandbox.js's pug layout`)
console.log('| after render | WebAssembly memories | their size | resident (huge pages) | process VmRSS (growth) |')
console.log('| --- | --- | --- | --- | --- |')
try {
  for (let i = 1; i <= RENDERS; i++) {
    await renderer.render(job)
    if (!REPORT_AT.has(i)) continue
    const memories = wasmMemories()
    const rss = vmRss()
    console.log(
      `| ${i} | ${memories.count} | ${memories.sizeKb} kB | ${memories.residentKb} kB (${memories.hugeKb} kB) | ` +
        `${(rss / 1024).toFixed(1)} MB (+${((rss - before) / 1024).toFixed(1)}) |`,
    )
  }
} finally {
  renderer.close()
}
