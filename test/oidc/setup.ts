import { Writable } from 'node:stream'
import type { Test } from 'tap'
import { buildApp, loggerOptions } from '../../app.js'
import { type Config, defaultConfig } from '../../config.js'
import { bearer } from '../helper.js'
import { sharedCompilers } from '../shared-compilers.js'
import { SCRIPT_CLIENT, startProvider, type TestProvider, WARD_API } from './provider.js'

export const ROLE_MAP = 'ward-nurse=write,ward-viewer=read,ward-admin=admin'

/** The settings a ward would write for the test provider (Keycloak-like role path). */
export function oidcConfig(provider: TestProvider, overrides: Partial<Config> = {}): Config {
  return defaultConfig({
    DATABASE_PATH: ':memory:',
    LOG_LEVEL: 'silent',
    RATE_LIMIT_MAX: 0,
    OIDC_ISSUER: provider.issuer,
    OIDC_AUDIENCE: WARD_API,
    OIDC_ROLE_CLAIM: 'realm_access.roles',
    OIDC_ROLE_MAP: ROLE_MAP,
    ...overrides,
  })
}

/** Every line the app logs, at trace level, as written (to look for tokens in). */
export function capturedLog() {
  const lines: string[] = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk))
      done()
    },
  })
  return { lines, stream }
}

export async function startTestProvider(t: Test, options: Parameters<typeof startProvider>[0] = {}) {
  const provider = await startProvider(options)
  t.teardown(() => provider.close())
  return provider
}

/** An app that accepts the provider's tokens, its log captured; closed when the test ends. */
export async function buildOidcApp(t: Test, provider: TestProvider, overrides: Partial<Config> = {}) {
  const config = oidcConfig(provider, overrides)
  const log = capturedLog()
  const app = await buildApp(config, {
    logger: { ...(loggerOptions(config) as object), level: 'trace', stream: log.stream },
    ...sharedCompilers,
  })
  t.teardown(() => app.close())
  const admin = app.tokens.create({ account: 'svc-admin', role: 'admin', facility: null }).token
  return { app, log, admin }
}

/** A client-credentials token from the provider for a script with these provider roles and facility. */
export async function scriptToken(provider: TestProvider, roles: string[], facility?: string): Promise<string> {
  provider.claims.set(SCRIPT_CLIENT.id, { realm_access: { roles }, ...(facility === undefined ? {} : { facility }) })
  return provider.clientCredentials()
}

/** A token as a person's would be (signed with the provider's key, its claims chosen). */
export function personToken(
  provider: TestProvider,
  account: string,
  roles: string[],
  facility: string | null,
  extra: Record<string, unknown> = {},
): Promise<string> {
  return provider.sign({ sub: account, realm_access: { roles }, ...(facility === null ? {} : { facility }), ...extra })
}

export { bearer }
