import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose'
import Provider from 'oidc-provider'

/** The ward API's identifier at the provider (the `aud` of its tokens), and another API's. */
export const WARD_API = 'api://ward'
export const OTHER_API = 'api://pharmacy'
export const SCRIPT_CLIENT = { id: 'ward-script', secret: 'script-secret-not-for-logs' }
export const BOARD_CLIENT = 'bed-board'

export type PrivateJwk = JWK & { kid: string }

export async function newKey(kid: string, alg: 'RS256' | 'ES256' = 'RS256'): Promise<PrivateJwk> {
  const { privateKey } = await generateKeyPair(alg, { extractable: true })
  return { ...(await exportJWK(privateKey)), kid, alg, use: 'sig' }
}

export function publicJwk(key: PrivateJwk): JWK {
  const { d, p, q, dp, dq, qi, ...rest } = key
  return rest
}

export interface ProviderOptions {
  /** The signing keys, the first signs; fresh ones when absent. Restarting with others rotates. */
  keys?: PrivateJwk[]
  /** Listen on this port (a restart keeps the issuer). */
  port?: number
  /** The board's redirect URIs (the Chromium test). */
  redirectUris?: string[]
  /** Access token lifetime in seconds. */
  accessTokenTtl?: number
  /** More clients (a SMART app), as oidc-provider takes them. */
  clients?: Record<string, unknown>[]
  /** The scopes the ward API's tokens may be granted (default `ward`), space-separated. */
  resourceScope?: string
}

export interface TestProvider {
  issuer: string
  port: number
  keys: PrivateJwk[]
  /** Extra claims per account (the login name) or per client id, put in its access tokens. */
  claims: Map<string, Record<string, unknown>>
  /** A client-credentials access token from the provider itself, for `resource`. */
  clientCredentials(resource?: string): Promise<string>
  /** A token signed with one of the provider's keys (or another), for the cases it would never issue. */
  sign(
    payload: Record<string, unknown>,
    options?: { key?: PrivateJwk; header?: Record<string, unknown> },
  ): Promise<string>
  close(): Promise<void>
}

/**
 * panva's oidc-provider, a real OpenID provider, on 127.0.0.1: discovery, a JWKS endpoint, the
 * client-credentials grant and the authorization code flow with its own login form. Its access
 * tokens for the ward API are JWTs (resource indicators), carrying the claims a test sets.
 */
export async function startProvider(options: ProviderOptions = {}): Promise<TestProvider> {
  const keys = options.keys ?? [await newKey('key-1')]
  const claims = new Map<string, Record<string, unknown>>()
  const server: Server = createServer()
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  const issuer = `http://127.0.0.1:${port}`
  const provider = new Provider(issuer, {
    jwks: { keys },
    clients: [
      {
        client_id: SCRIPT_CLIENT.id,
        client_secret: SCRIPT_CLIENT.secret,
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
      },
      {
        client_id: BOARD_CLIENT,
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        redirect_uris: options.redirectUris ?? ['http://127.0.0.1/board/'],
      },
      ...(options.clients ?? []),
    ],
    pkce: { required: () => true },
    // The board renews its token with a refresh token (kept in its memory, like the access token).
    issueRefreshToken: (_ctx: unknown, client: { clientId: string }) => client.clientId === BOARD_CLIENT,
    ttl: { AccessToken: options.accessTokenTtl ?? 300, ClientCredentials: options.accessTokenTtl ?? 300 },
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => WARD_API,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, resource: string) => {
          if (resource !== WARD_API && resource !== OTHER_API) throw new Provider.errors.InvalidTarget()
          return {
            scope: options.resourceScope ?? 'ward',
            audience: resource,
            accessTokenFormat: 'jwt',
            accessTokenTTL: options.accessTokenTtl ?? 300,
          }
        },
      },
    },
    extraTokenClaims: (_ctx: unknown, token: { accountId?: string; clientId?: string }) =>
      claims.get(token.accountId ?? token.clientId ?? '') ?? {},
    findAccount: (_ctx: unknown, id: string) => ({ accountId: id, claims: () => ({ sub: id }) }),
  })
  // Quiet: the provider reports refused requests (a test's bad client) as server errors.
  provider.on('server_error', () => {})
  server.on('request', provider.callback())

  async function clientCredentials(resource = WARD_API): Promise<string> {
    const response = await fetch(`${issuer}/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${SCRIPT_CLIENT.id}:${SCRIPT_CLIENT.secret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', resource, scope: 'ward' }),
    })
    const body = (await response.json()) as { access_token?: string }
    if (!response.ok || !body.access_token)
      throw new Error(`token endpoint: ${response.status} ${JSON.stringify(body)}`)
    return body.access_token
  }

  async function sign(
    payload: Record<string, unknown>,
    opts: { key?: PrivateJwk; header?: Record<string, unknown> } = {},
  ) {
    const key = opts.key ?? (keys[0] as PrivateJwk)
    const now = Math.floor(Date.now() / 1000)
    const { importJWK } = await import('jose')
    return new SignJWT({ iss: issuer, aud: WARD_API, iat: now, exp: now + 300, ...payload })
      .setProtectedHeader({ alg: key.alg as string, kid: key.kid, typ: 'at+jwt', ...opts.header })
      .sign(await importJWK(key))
  }

  return {
    issuer,
    port,
    keys,
    claims,
    clientCredentials,
    sign,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
