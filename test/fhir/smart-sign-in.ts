import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import smart from 'fhirclient'
import type { Test } from 'tap'

/**
 * A SMART app as its makers would write it on a Node server: fhirclient's own node entry
 * (`smart(req, res, storage)`), a standalone launch at `/launch` (`authorize`) and the redirect back
 * at `/callback` (`ready`), which exchanges the code (with PKCE) for a token at the provider. The
 * state it keeps between the two requests lives in a storage of its own, as fhirclient asks.
 */
/** fhirclient's Client (its type is not exported by the package's node entry). */
export type Client = Awaited<ReturnType<ReturnType<typeof smart>['ready']>>

export interface SmartApp {
  url: string
  redirectUri: string
  /** The clients `ready()` gave, by the `state` of their launch. */
  signedIn: Map<string, Promise<Client>>
}

export const SMART_APP_CLIENT = 'ward-smart-app'

function memoryStorage() {
  const items = new Map<string, unknown>()
  return {
    get: async (key: string) => items.get(key),
    set: async (key: string, value: unknown) => {
      items.set(key, value)
      return value
    },
    unset: async (key: string) => items.delete(key),
  }
}

export async function startSmartApp(t: Test, fhirBase: () => string): Promise<SmartApp> {
  const storage = memoryStorage()
  const signedIn = new Map<string, Promise<Client>>()
  const server = createServer(function smartApp(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://app')
    if (url.pathname === '/launch') {
      smart(req, res, storage)
        .authorize({
          clientId: SMART_APP_CLIENT,
          scope: url.searchParams.get('scope') ?? '',
          redirectUri: '/callback',
          iss: fhirBase(),
          pkceMode: 'required',
        })
        .catch((error: Error) => res.writeHead(500).end(error.message))
      return
    }
    if (url.pathname === '/callback') {
      const client = smart(req, res, storage).ready()
      signedIn.set(url.searchParams.get('state') ?? '', client)
      client.then(
        () => res.end('signed in'),
        (error: Error) => res.writeHead(500).end(error.message),
      )
      return
    }
    res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { url, redirectUri: `${url}/callback`, signedIn }
}

/**
 * A person at a browser: opens the app's launch page with these scopes, follows the redirects to
 * the provider, signs in on its login form as `login` and consents, and is sent back to the app,
 * which gets its token. Cookies kept as a browser would (one jar; the provider's paths ignored).
 */
export async function signIn(app: SmartApp, scope: string, login: string): Promise<Client> {
  const jar = new Map<string, string>()
  const cookie = () => [...jar].map(([name, value]) => `${name}=${value}`).join('; ')
  let request: { url: string; init: RequestInit } = {
    url: `${app.url}/launch?scope=${encodeURIComponent(scope)}`,
    init: {},
  }
  for (let hop = 0; hop < 20; hop++) {
    const res = await fetch(request.url, {
      ...request.init,
      redirect: 'manual',
      headers: { ...request.init.headers, cookie: cookie() },
    })
    for (const line of res.headers.getSetCookie()) {
      const [pair = ''] = line.split(';')
      const at = pair.indexOf('=')
      jar.set(pair.slice(0, at), pair.slice(at + 1))
    }
    const location = res.headers.get('location')
    if (res.status >= 300 && res.status < 400 && location !== null) {
      request = { url: new URL(location, request.url).href, init: {} }
      continue
    }
    const body = await res.text()
    if (request.url.startsWith(app.redirectUri)) {
      const client = app.signedIn.get(new URL(request.url).searchParams.get('state') ?? '')
      if (res.status !== 200 || client === undefined) throw new Error(`the app's callback: ${res.status} ${body}`)
      return client
    }
    const prompt = /name="prompt" value="(\w+)"/.exec(body)?.[1]
    if (res.status !== 200 || prompt === undefined)
      throw new Error(`${request.url}: ${res.status} ${body.slice(0, 500)}`)
    request = {
      url: request.url,
      init: {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ prompt, login, password: 'any' }).toString(),
      },
    }
  }
  throw new Error('the sign-in went round in circles')
}
