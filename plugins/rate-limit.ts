import rateLimit from '@fastify/rate-limit'
import fp from 'fastify-plugin'

export interface RateLimitOptions {
  max: number
  windowMs: number
}

/**
 * Per-token request limit for normal traffic (failed authentication has its own, stricter,
 * per-address limit in the auth plugin). max = 0 turns it off.
 */
export default fp<RateLimitOptions>(
  async function rateLimitPlugin(fastify, opts) {
    if (opts.max === 0) return
    await fastify.register(rateLimit, {
      max: opts.max,
      timeWindow: opts.windowMs,
      // After authentication, so the key is the token rather than the address.
      hook: 'preParsing',
      keyGenerator: (request) => request.principal?.tokenId ?? request.ip,
      // The plugin's `context.after` is the time left in the window, not the window: the window is
      // the configured one, the wait is what Retry-After says.
      errorResponseBuilder: (_request, context) => ({
        statusCode: 429,
        error: 'Too Many Requests',
        code: 'RATE_LIMITED',
        message: `rate limit of ${context.max} requests per ${opts.windowMs / 1000} seconds exceeded; retry in ${Math.ceil(context.ttl / 1000)} seconds`,
      }),
    })
  },
  { name: 'rate-limit', fastify: '5.x', dependencies: ['auth'] },
)
