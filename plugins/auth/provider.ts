import fp from 'fastify-plugin'
import type { Config } from '../../config.js'
import { parseClaimList, parseRoleMap } from '../../domain/claims.js'
import { readAlgorithms } from '../../lib/jwt-algorithms.js'
import { ProviderKeys } from './key-set.js'
import { createProviderTokens, type ProviderTokens } from './provider-tokens.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Tokens of the hospital's identity provider (docs/SIGN-IN.md); null without OIDC_ISSUER. */
    providerTokens: ProviderTokens | null
  }
}

export interface ProviderPluginOptions {
  config: Config
}

/**
 * The identity provider, at the root so that the feed (stream tickets, open streams) and /health
 * see it as well as the authenticated routes. Its keys are loaded before the server listens, but a
 * provider that cannot be reached does not stop the start: /health tells, and service tokens work.
 */
export default fp<ProviderPluginOptions>(
  async function providerPlugin(fastify, opts) {
    const config = opts.config
    if (config.OIDC_ISSUER === '') {
      fastify.decorate('providerTokens', null)
      return
    }
    const keys = new ProviderKeys({
      issuer: config.OIDC_ISSUER,
      file: config.OIDC_JWKS_FILE,
      cooldownMs: config.OIDC_KEY_COOLDOWN_SECONDS * 1000,
      maxAgeMs: config.OIDC_KEY_MAX_AGE_SECONDS * 1000,
    })
    const tokens = createProviderTokens(keys, {
      issuer: config.OIDC_ISSUER,
      audience: config.OIDC_AUDIENCE,
      algorithms: readAlgorithms(config.OIDC_ALGORITHMS),
      clockSkewSeconds: config.OIDC_CLOCK_SKEW_SECONDS,
      maxLifetimeSeconds: config.OIDC_MAX_TOKEN_LIFETIME_SECONDS,
      memory: config.OIDC_TOKEN_MEMORY,
      rules: {
        accountClaims: parseClaimList(config.OIDC_ACCOUNT_CLAIM),
        roleClaim: config.OIDC_ROLE_CLAIM,
        roleMap: parseRoleMap(config.OIDC_ROLE_MAP),
        facilityClaim: config.OIDC_FACILITY_CLAIM,
        allowUnbound: config.OIDC_ALLOW_UNBOUND,
      },
    })
    fastify.decorate('providerTokens', tokens)
    await keys.refresh()
    const status = keys.status()
    if (status.failing !== null)
      fastify.log.warn(
        { problem: status.failing.message },
        "the identity provider's keys could not be loaded: only service tokens work until they are (/health tells)",
      )
    else fastify.log.info({ keys: status.keys, issuer: config.OIDC_ISSUER }, "the identity provider's keys are loaded")
  },
  { name: 'provider-tokens', fastify: '5.x' },
)
