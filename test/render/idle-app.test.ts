import t, { type Test } from 'tap'
import { bearer, buildTestApp, type TestApp } from '../helper.js'
import { until } from '../reliability/fault-helpers.js'

async function print(t: Test, app: TestApp, token: string, name: string, template: string): Promise<string> {
  const created = await app.inject({
    method: 'POST',
    url: '/form-templates',
    headers: bearer(token),
    payload: { type: 'vitals', name, template, items: [] },
  })
  t.equal(created.statusCode, 200, created.body)
  const rendered = await app.inject({ url: `/form-templates/${created.json().id}/render`, headers: bearer(token) })
  t.equal(rendered.statusCode, 200, rendered.body)
  return rendered.body
}

t.test('RENDER_WORKER_IDLE_SECONDS ends the compile and print workers; the next print starts them', async (t) => {
  const { app, tokens } = await buildTestApp(t, { RENDER_WORKER_IDLE_SECONDS: 1, RENDER_COMPILER_IDLE_SECONDS: 1 })
  t.equal(app.renderer.workers(), 0, 'no worker before the first print')
  t.equal(await print(t, app, tokens.writeA, 'first', 'h1= name'), '<h1>first</h1>')
  // Counted by what they did, not by how many still run: on a loaded machine the compile worker
  // may already have been idle for its second before the print's answer came back.
  t.same(
    app.renderer.stats(),
    { compiles: 1, cacheHits: 0, cached: 1, waiting: 0, failures: {}, refused: { busy: 0, cancelled: 0 } },
    'a compile worker compiled it, a print worker ran it',
  )
  await until(() => app.renderer.workers() === 0)
  t.pass('every worker, the compile worker included, ended once idle')
  // A layout never seen before: it needs the compile worker, which starts again.
  t.equal(await print(t, app, tokens.writeA, 'second', 'p= name'), '<p>second</p>')
  t.same(app.renderer.stats(), {
    compiles: 2,
    cacheHits: 0,
    cached: 2,
    waiting: 0,
    failures: {},
    refused: { busy: 0, cancelled: 0 },
  })
})

t.test('RENDER_COMPILER_IDLE_SECONDS ends the compile worker alone; prints of compiled layouts go on', async (t) => {
  // Three seconds: long enough that the compile worker still runs when the first print answers,
  // even on a loaded machine (the count below is taken then).
  const { app, tokens } = await buildTestApp(t, { RENDER_WORKER_IDLE_SECONDS: 0, RENDER_COMPILER_IDLE_SECONDS: 3 })
  t.equal(await print(t, app, tokens.writeA, 'first', 'h1= name'), '<h1>first</h1>')
  const withCompiler = app.renderer.workers()
  t.ok(withCompiler >= 2, 'a compile and a print worker ran it')
  await until(() => app.renderer.workers() === withCompiler - 1)
  t.pass('the compile worker ended once idle, the print workers stayed')
  // Another template with the same layout: compiled already, so no compile worker starts.
  t.equal(await print(t, app, tokens.writeA, 'second', 'h1= name'), '<h1>second</h1>')
  t.equal(app.renderer.workers(), withCompiler - 1, 'no compile worker for a cached layout')
  t.same(app.renderer.stats(), {
    compiles: 1,
    cacheHits: 1,
    cached: 1,
    waiting: 0,
    failures: {},
    refused: { busy: 0, cancelled: 0 },
  })
})

t.test('RENDER_WORKERS: prints that come at once run in that many print workers, the rest wait', async (t) => {
  for (const workers of [1, 2]) {
    const { app, tokens } = await buildTestApp(t, {
      RENDER_WORKERS: workers,
      RENDER_WORKER_IDLE_SECONDS: 0,
      RENDER_COMPILER_IDLE_SECONDS: 1,
    })
    t.equal(await print(t, app, tokens.writeA, 'first', 'h1= name'), '<h1>first</h1>')
    // The compile worker ends after its second; the first print started a spare print worker if it may.
    const settled = Date.now() + 10_000
    await until(() => app.renderer.workers() <= workers || Date.now() > settled)
    t.equal(app.renderer.workers(), workers, `${workers}: print workers after the first print`)
    const created = await app.inject({
      method: 'POST',
      url: '/form-templates',
      headers: bearer(tokens.writeA),
      payload: { type: 'vitals', name: 'burst', template: 'h1= name', items: [] },
    })
    const url = `/form-templates/${created.json().id}/render`
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => app.inject({ url, headers: bearer(tokens.writeA) })),
    )
    t.same(
      answers.map((a) => a.statusCode),
      Array(8).fill(200),
      `${workers}: every print of the burst answered`,
    )
    t.equal(app.renderer.workers(), workers, `${workers}: that many print workers ran them, no more`)
  }
})
