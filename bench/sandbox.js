// The print sandbox on its own (issue 16): how long one typical print layout takes to render, with
// the compiled layout cached, one at a time and with one render per CPU at once. Needs dist/
// (`npm run build`); `npm run bench:sandbox [-- --renders N]`. See docs/PERFORMANCE.md.
import { availableParallelism } from 'node:os'
import { parseArgs } from 'node:util'
import { createRenderer } from '../dist/render/sandbox.js'
import { LAYOUTS, record } from './print-sample.js'

const { values: args } = parseArgs({ options: { renders: { type: 'string', default: '400' } } })
const RENDERS = Number(args.renders)
const LIMITS = { timeoutMs: 1000, memoryMb: 32, maxOutputBytes: 2_097_152 }

async function measure(engine) {
  const renderer = createRenderer(LIMITS)
  const job = { engine, source: LAYOUTS[engine], cacheKey: `bench:1:${engine}`, data: record }
  try {
    let started = performance.now()
    const html = await renderer.render(job)
    const first = performance.now() - started
    for (let i = 0; i < 20; i++) await renderer.render(job)
    started = performance.now()
    for (let i = 0; i < RENDERS; i++) await renderer.render(job)
    const sequential = (performance.now() - started) / RENDERS
    const parallel = availableParallelism()
    started = performance.now()
    await Promise.all(
      Array.from({ length: parallel }, async () => {
        for (let i = 0; i < RENDERS / parallel; i++) await renderer.render(job)
      }),
    )
    const perSecond = RENDERS / ((performance.now() - started) / 1000)
    return { engine, bytes: Buffer.byteLength(html), first, sequential, perSecond, parallel }
  } finally {
    renderer.close()
  }
}

const rows = []
for (const engine of ['pug', 'ejs']) rows.push(await measure(engine))
console.log(`node ${process.version}, ${availableParallelism()} CPUs, ${RENDERS} renders per row`)
console.log('| layout | HTML bytes | first render (start + compile) | one at a time | renders/s, one per CPU at once |')
console.log('| --- | --- | --- | --- | --- |')
for (const row of rows) {
  console.log(
    `| ${row.engine} admission form, 20 questions | ${row.bytes} | ${row.first.toFixed(0)} ms | ` +
      `${row.sequential.toFixed(2)} ms | ${row.perSecond.toFixed(0)} (${row.parallel} at once) |`,
  )
}
