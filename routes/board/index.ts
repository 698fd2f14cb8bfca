import fastifyStatic from '@fastify/static'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { productPath } from '../../lib/product-files.js'

/** Where the board's files are; inside the executable, their copy on disk, made on first use. */
export const boardRoot = (): string => productPath('public/board')

/**
 * The bed board (docs/BOARD.md): one page and its script and style, served as files from
 * public/board without a token. Everything it shows it asks for with the token the user pastes,
 * so the page itself holds no data. Only the files present at start are served (no wildcard route),
 * so nothing else under public/ can be reached by a crafted path.
 */
const boardRoutes: FastifyPluginAsyncTypebox = async function boardRoutes(fastify) {
  await fastify.register(fastifyStatic, {
    root: boardRoot(),
    prefix: '/board/',
    wildcard: false,
    index: false,
    // The page changes with the service: a browser asks again (and gets a 304) on every load.
    cacheControl: false,
    setHeaders(res) {
      res.setHeader('cache-control', 'no-cache')
    },
  })

  fastify.get('/board', { schema: { hide: true } }, function boardPage(_request, reply) {
    reply.header('cache-control', 'no-cache')
    return reply.sendFile('index.html')
  })
}

export default boardRoutes
