import fp from 'fastify-plugin'
import { createRenderer, type Renderer, type RenderLimits } from './sandbox.js'

declare module 'fastify' {
  interface FastifyInstance {
    renderer: Renderer
  }
}

export default fp<RenderLimits>(
  async function rendererPlugin(fastify, limits) {
    const renderer = createRenderer({
      timeoutMs: limits.timeoutMs,
      memoryMb: limits.memoryMb,
      maxOutputBytes: limits.maxOutputBytes,
    })
    fastify.decorate('renderer', renderer)
    fastify.addHook('onClose', async function closeRenderer() {
      renderer.close()
    })
  },
  { name: 'renderer', fastify: '5.x' },
)
