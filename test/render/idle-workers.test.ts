import t from 'tap'
import { createRenderer } from '../../render/sandbox.js'
import { until } from '../reliability/fault-helpers.js'
import { DEFAULT_LIMITS, job } from './helpers.js'

t.test('idle print workers are ended and their memory given back; the next print starts them again', async (t) => {
  const renderer = createRenderer(DEFAULT_LIMITS, { maxConcurrent: 2, workerIdleMs: 30 })
  t.teardown(() => renderer.close())
  t.equal(renderer.workers(), 0, 'no worker before the first print')
  t.equal(await renderer.render(job('pug', 'p= name', { name: 'A' })), '<p>A</p>')
  // Checked in the turn the answer came in: the worker that answered has only just gone idle.
  t.ok(renderer.workers() >= 1, 'the render worker that answered is still there')
  await until(() => renderer.workers() === 0)
  t.pass('every worker ended once idle')
  t.equal(await renderer.render(job('ejs', '<p><%= name %></p>', { name: 'B' })), '<p>B</p>', 'a later print works')
  t.equal(await renderer.render(job('pug', 'p= name', { name: 'C' })), '<p>C</p>', 'a cached layout too')
})

t.test('with no idle time the workers stay', async (t) => {
  const renderer = createRenderer(DEFAULT_LIMITS, { maxConcurrent: 2, workerIdleMs: 0 })
  t.teardown(() => renderer.close())
  await renderer.render(job('pug', 'p= name', { name: 'A' }))
  const alive = renderer.workers()
  // Many turns of the event loop later (no clock involved), nothing was ended.
  for (let i = 0; i < 200; i++) await new Promise((resolve) => setImmediate(resolve))
  t.equal(renderer.workers(), alive)
})
