/**
 * The public entry point (docs/SCRIPTING.md): `import { build } from 'facility-service'`. What this
 * file exports is the contract for scripts; every other module of the package is internal and
 * unreachable through the package's `exports`.
 */
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { buildApp } from './app.js'
import { ConfigError, loadConfig } from './config.js'
import { ROLES } from './domain/principal.js'

export { ConfigError }

export type Role = 'read' | 'write' | 'admin'

export interface BuildOptions {
  /** The SQLite file to work on (created when missing), or ':memory:' for a throw-away database. */
  database: string
  /**
   * Settings, by the names and rules of the environment variables (docs/reference/SETTINGS.md): `{ BED_POLICY:
   * 'shared' }`. Checked like the server checks its environment; a bad value throws ConfigError.
   * The environment itself is not read.
   */
  settings?: Record<string, string | number | boolean>
}

export interface ScriptTokenOptions {
  /** The account the token acts as: it becomes `createdBy` of what the script writes. */
  account: string
  role: Role
  /** Bind the token to one facility (it then sees and changes only that facility's records). */
  facility?: string
  label?: string
  /** Lifetime in milliseconds; one hour unless given. */
  expiresInMs?: number
}

export interface ScriptToken {
  /** For `authorization: Bearer <token>`. */
  token: string
  /** The token's id, as `facility-service token list` shows it. */
  id: string
  /** Revokes the token at once (it is kept, revoked, like every token). */
  revoke(): void
}

export interface FacilityService {
  /** A request to the service in this process, exactly as a client's over HTTP, without a network. */
  inject(request: InjectOptions | string): Promise<LightMyRequestResponse>
  /** Creates a token in this service's database (so it is in that file's token list, revoked or not). */
  createToken(options: ScriptTokenOptions): ScriptToken
  /** Closes the service and its database. Always call it (in a `finally`). */
  close(): Promise<void>
  /** The Fastify instance underneath, for what `inject` does not cover. Only Fastify's own API on it is stable. */
  readonly fastify: FastifyInstance
}

const HOUR = 3_600_000

/** Builds the whole service on a database, never listening: for smoke tests, checks, rehearsals. */
export async function build(options: BuildOptions): Promise<FacilityService> {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(options.settings ?? {})) env[name] = String(value)
  env.DATABASE_PATH = options.database
  const app = await buildApp(loadConfig(env))
  return {
    inject: (request) => app.inject(request as InjectOptions),
    createToken(token: ScriptTokenOptions): ScriptToken {
      // Scripts are often plain JavaScript: say what is wrong instead of failing in SQL.
      if (!ROLES.includes(token.role)) throw new TypeError(`role must be one of ${ROLES.join(', ')}`)
      if (typeof token.account !== 'string' || token.account === '')
        throw new TypeError('account must be a non-empty string')
      const created = app.tokens.create({
        account: token.account,
        role: token.role,
        facility: token.facility ?? null,
        label: token.label ?? 'script',
        expiresAt: Date.now() + (token.expiresInMs ?? HOUR),
      })
      return { token: created.token, id: created.info.tokenId, revoke: () => app.tokens.revoke(created.info.tokenId) }
    },
    close: () => app.close(),
    fastify: app,
  }
}
