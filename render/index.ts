import fp from 'fastify-plugin'
import { createRenderer, type Renderer, type RenderLimits } from './sandbox.js'

declare module 'fastify' {
  interface FastifyInstance {
    renderer: Renderer
  }
}

export interface RendererPluginOptions extends RenderLimits {
  /** Print workers idle this long are ended (their memory given back); 0 keeps them. */
  workerIdleMs: number
  /** The compile worker idle this long is ended; 0 keeps it. */
  compilerIdleMs?: number
  /** Memory for compiled layouts. */
  cacheBytes: number
  /** Print workers: the renders that may run at once. */
  workers: number
  /** Prints of one facility that may wait for a print worker; one more is answered 503 RENDER_BUSY. */
  queueMax: number
}

export default fp<RendererPluginOptions>(
  async function rendererPlugin(fastify, opts) {
    const renderer = createRenderer(
      { timeoutMs: opts.timeoutMs, memoryMb: opts.memoryMb, maxOutputBytes: opts.maxOutputBytes },
      {
        workerIdleMs: opts.workerIdleMs,
        compilerIdleMs: opts.compilerIdleMs,
        cacheBytes: opts.cacheBytes,
        maxConcurrent: opts.workers,
        maxWaiting: opts.queueMax,
      },
    )
    fastify.decorate('renderer', renderer)
    fastify.addHook('onClose', async function closeRenderer() {
      renderer.close()
    })
  },
  { name: 'renderer', fastify: '5.x' },
)
