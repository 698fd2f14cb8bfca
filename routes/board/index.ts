import fastifyStatic from '@fastify/static'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { productPath, productText } from '../../lib/product-files.js'

/** Where the board's files are; inside the executable, their copy on disk, made on first use. */
export const boardRoot = (): string => productPath('public/board')
export const FAVICON_FILE = 'public/favicon.svg'

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

  // What the page needs to sign in with the hospital's provider; no secret (the board is a public
  // client, PKCE stands in for a secret). Without OIDC_BOARD_CLIENT_ID it offers the pasted token only.
  const config = fastify.config
  const signIn =
    config.OIDC_BOARD_CLIENT_ID === ''
      ? { provider: null }
      : {
          provider: {
            issuer: config.OIDC_ISSUER,
            clientId: config.OIDC_BOARD_CLIENT_ID,
            scope: config.OIDC_BOARD_SCOPE,
          },
        }
  fastify.get('/board/sign-in', { schema: { hide: true } }, function boardSignIn(_request, reply) {
    return reply.header('cache-control', 'no-cache').send(signIn)
  })

  // The address people type with a slash: one page, one address (its assets are linked absolutely,
  // so serving it here would work too, but a bookmark should not depend on that).
  fastify.get('/board/', { schema: { hide: true } }, function boardWithSlash(request, reply) {
    const query = request.url.indexOf('?')
    return reply.redirect(`/board${query === -1 ? '' : request.url.slice(query)}`, 301)
  })

  // Browsers ask for /favicon.ico on every page they show; a 404 is a console error on every
  // corridor screen. The board links it too. An SVG (a few hundred bytes, no script), kept a day.
  const favicon = productText(FAVICON_FILE)
  fastify.get('/favicon.ico', { schema: { hide: true } }, function faviconIcon(_request, reply) {
    return reply.header('cache-control', 'public, max-age=86400').type('image/svg+xml').send(favicon)
  })
}

export default boardRoutes
