import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import helmet, { type HelmetOptions } from 'helmet'

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * `print`: the route answers user-written HTML (a print layout): no script at all, in a sandbox.
     * `docs`: the API docs page (Swagger UI), whose script sets inline styles.
     */
    securityHeaders?: 'print' | 'docs'
  }
}

/**
 * Which headers an answer carries depends on what it is (docs/SECURITY.md, "Headers on answers"):
 * - every answer, JSON and errors included, the OWASP set for REST APIs (API_HEADERS); a browser
 *   that opens one renders nothing active from it and never frames it;
 * - the service's own HTML pages (`/docs`, the board: any answer of type text/html) helmet's full set
 *   (PAGE_HEADERS), with a policy that allows this origin's own scripts and styles;
 * - print layouts (routes with `config: { securityHeaders: 'print' }`), user-written HTML, the same
 *   set with a policy that allows no script at all and opens the page in a sandbox (PRINT_HEADERS);
 * - Strict-Transport-Security only when the request came over TLS (itself, or behind TRUST_PROXY a
 *   forwarded protocol of https): on plain HTTP a browser ignores it anyway.
 * The sets are computed once at start; per answer it is a few setHeader calls.
 */
const API_HEADERS: [string, string][] = [
  ['cache-control', 'no-store'],
  ['x-content-type-options', 'nosniff'],
  ['x-frame-options', 'DENY'],
  ['content-security-policy', "frame-ancestors 'none'"],
]

const HSTS = 'strict-transport-security'

// The board and the API docs page load their scripts, styles and fonts from this origin only: no
// inline style (an injected <style> or style="" attribute is refused), no font from elsewhere
// (helmet's default would allow any https: or data: font). Images may be data: URLs, which the
// docs page's stylesheet uses for its icons.
const PAGE_POLICY: NonNullable<HelmetOptions['contentSecurityPolicy']> = {
  directives: {
    defaultSrc: ["'self'"],
    scriptSrc: ["'self'"],
    styleSrc: ["'self'"],
    fontSrc: ["'self'"],
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
}

// Swagger UI (/docs, a third-party bundle) sets style attributes from its script, which the page
// policy refuses (the page works, minus some highlighting, and logs each refusal). Its page alone
// may apply inline styles; scripts, fonts and everything else stay this origin's. The page shows
// the OpenAPI document, no patient data.
const DOCS_POLICY: NonNullable<HelmetOptions['contentSecurityPolicy']> = {
  directives: { ...PAGE_POLICY.directives, styleSrc: ["'self'", "'unsafe-inline'"] },
}

// A print layout is shown, never run: no script, form, plugin or frame, no fetching beyond its own
// images; `sandbox` (no allow- tokens) also gives it an opaque origin.
const PRINT_POLICY: NonNullable<HelmetOptions['contentSecurityPolicy']> = {
  useDefaults: false,
  directives: {
    defaultSrc: ["'none'"],
    styleSrc: ["'unsafe-inline'"],
    imgSrc: ["'self'", 'data:'],
    fontSrc: ['data:'],
    formAction: ["'none'"],
    baseUri: ["'none'"],
    frameAncestors: ["'none'"],
    sandbox: [],
  },
}

function pageOptions(contentSecurityPolicy: HelmetOptions['contentSecurityPolicy']): HelmetOptions {
  return {
    contentSecurityPolicy,
    crossOriginResourcePolicy: { policy: 'same-origin' },
    // The same as frame-ancestors 'none', for browsers that only know the older header.
    frameguard: { action: 'deny' },
  }
}

type Middleware = (req: unknown, res: unknown, next: (error?: unknown) => void) => void

/**
 * The headers helmet writes for these options. They are the same on every answer (no nonces), so
 * helmet runs once here: a per-request plugin (@fastify/helmet) would build helmet's middleware again on every request
 * (parsing the policy each time), a tenth of the cost of a simple read.
 */
export function securityHeaderValues(options: HelmetOptions = pageOptions(PAGE_POLICY)): {
  set: [string, string][]
  remove: string[]
} {
  const set: [string, string][] = []
  const remove: string[] = []
  const recorder = {
    setHeader: (name: string, value: unknown) => set.push([name.toLowerCase(), String(value)]),
    removeHeader: (name: string) => remove.push(name),
  }
  const middleware = helmet(options) as unknown as Middleware
  middleware({}, recorder, (error) => {
    if (error) throw error
  })
  return { set, remove }
}

/** helmet's set for an HTML answer, without HSTS (added per request, over TLS only). */
function htmlHeaders(policy: HelmetOptions['contentSecurityPolicy']): [string, string][] {
  return securityHeaderValues(pageOptions(policy)).set.filter(([name]) => name !== HSTS)
}

export const HEADER_SETS = {
  api: API_HEADERS,
  page: htmlHeaders(PAGE_POLICY),
  docs: htmlHeaders(DOCS_POLICY),
  print: htmlHeaders(PRINT_POLICY),
  hsts: securityHeaderValues().set.find(([name]) => name === HSTS) as [string, string],
}

export interface SecurityHeadersOptions {
  /**
   * The identity provider's origin, when the bed board signs in with it (OIDC_BOARD_CLIENT_ID):
   * the board's script reads the provider's discovery document and trades its code for a token
   * there, so the page policy lets it connect to that one origin too.
   */
  signInOrigin?: string
}

export default fp<SecurityHeadersOptions>(
  async function securityHeaders(fastify, opts) {
    const { api, hsts } = HEADER_SETS
    const origin = opts.signInOrigin
    const sets = {
      ...HEADER_SETS,
      page:
        origin === undefined
          ? HEADER_SETS.page
          : htmlHeaders({ directives: { ...PAGE_POLICY.directives, connectSrc: ["'self'", origin] } }),
    }
    // Set before the route runs, so answers that bypass onSend (the event stream) have them too.
    fastify.addHook('onRequest', function setApiHeaders(request, reply, done) {
      const raw = reply.raw
      for (const [name, value] of api) raw.setHeader(name, value)
      if (request.protocol === 'https') raw.setHeader(hsts[0], hsts[1])
      done()
    })
    // An HTML answer gets the set of what it is; a route that errs answers JSON and keeps the above.
    fastify.addHook('onSend', function setPageHeaders(request: FastifyRequest, reply: FastifyReply, payload, done) {
      const type = reply.getHeader('content-type')
      if (typeof type === 'string' && type.startsWith('text/html')) {
        const set = sets[request.routeOptions.config.securityHeaders ?? 'page']
        for (const [name, value] of set) reply.raw.setHeader(name, value)
      }
      done(null, payload)
    })
  },
  { name: 'security-headers', fastify: '5.x' },
)
