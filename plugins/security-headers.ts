import { createRequire } from 'node:module'
import fp from 'fastify-plugin'
import type { HelmetOptions } from 'helmet'

/**
 * Security headers on every answer. The content security policy allows only this origin's own
 * scripts and styles (plus the inline styles and data: images the API docs page uses), so the
 * interactive docs work and nothing else may run in a browser that opens a response.
 */
const options: HelmetOptions = {
  contentSecurityPolicy: {
    directives: {
      defaultSrc: ["'self'"],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'", "'unsafe-inline'"],
      imgSrc: ["'self'", 'data:'],
      connectSrc: ["'self'"],
      objectSrc: ["'none'"],
      frameAncestors: ["'none'"],
      formAction: ["'self'"],
      baseUri: ["'self'"],
      // helmet adds upgrade-insecure-requests by default: a browser then fetches the page's own
      // scripts and styles over https, which a ward server reached as http://<host>:3000 does not
      // serve, and the bed board (/board) loads without its script. Only loopback is exempt.
      upgradeInsecureRequests: null,
    },
  },
  // The API is not meant to be embedded or opened cross-origin.
  crossOriginResourcePolicy: { policy: 'same-origin' },
}

type Middleware = (req: unknown, res: unknown, next: (error?: unknown) => void) => void

/**
 * The headers helmet writes for these options. They are the same on every answer (no nonces), so
 * helmet runs once here: @fastify/helmet would build helmet's middleware again on every request
 * (parsing the policy each time), a tenth of the cost of a simple read. helmet is the one
 * @fastify/helmet depends on, resolved from there.
 */
export function securityHeaderValues(): { set: [string, string][]; remove: string[] } {
  const require = createRequire(createRequire(import.meta.url).resolve('@fastify/helmet'))
  const helmet = require('helmet') as (options: HelmetOptions) => Middleware
  const set: [string, string][] = []
  const remove: string[] = []
  const recorder = {
    setHeader: (name: string, value: unknown) => set.push([name, String(value)]),
    removeHeader: (name: string) => remove.push(name),
  }
  helmet(options)({}, recorder, (error) => {
    if (error) throw error
  })
  return { set, remove }
}

export default fp(
  async function securityHeaders(fastify) {
    const { set, remove } = securityHeaderValues()
    fastify.addHook('onRequest', function setSecurityHeaders(_request, reply, done) {
      for (const [name, value] of set) reply.raw.setHeader(name, value)
      for (const name of remove) reply.raw.removeHeader(name)
      done()
    })
  },
  { name: 'security-headers', fastify: '5.x' },
)
