import Fastify from 'fastify'
import t from 'tap'
import rendererPlugin from '../../render/index.js'
import { DEFAULT_LIMITS } from './helpers.js'

const OPTIONS = { ...DEFAULT_LIMITS, workerIdleMs: 0, cacheBytes: 16_777_216, workers: 2, queueMax: 32 }

t.test('the plugin decorates fastify.renderer and render errors answer 422', async (t) => {
  const app = Fastify()
  await app.register(rendererPlugin, OPTIONS)
  app.post<{ Body: { source: string } }>('/print', async (request, reply) => {
    const html = await app.renderer.render({
      engine: 'pug',
      source: request.body.source,
      cacheKey: `print:${request.body.source}`,
      data: { name: 'Ward <3>' },
    })
    return reply.type('text/html').send(html)
  })
  t.teardown(() => app.close())

  const ok = await app.inject({ method: 'POST', url: '/print', payload: { source: 'h1= name' } })
  t.equal(ok.statusCode, 200)
  t.equal(ok.body, '<h1>Ward &lt;3&gt;</h1>')

  const broken = await app.inject({ method: 'POST', url: '/print', payload: { source: 'p(title=)' } })
  t.equal(broken.statusCode, 422)
  t.match(broken.json(), {
    statusCode: 422,
    error: 'Unprocessable Entity',
    code: 'RENDER_COMPILE_FAILED',
    message: /^Pug:1:9/,
  })
})

t.test('closing the app closes the renderer', async (t) => {
  const app = Fastify()
  await app.register(rendererPlugin, OPTIONS)
  await app.ready()
  t.equal(await app.renderer.render({ engine: 'ejs', source: '<%= 1 %>', cacheKey: 'k', data: {} }), '1')
  await app.close()
  await t.rejects(app.renderer.render({ engine: 'ejs', source: '<%= 1 %>', cacheKey: 'k', data: {} }), /closed/)
})
