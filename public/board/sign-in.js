// Sign-in with the hospital's identity provider: the authorization code flow with PKCE (S256) for a
// public client, written over the browser's own WebCrypto (docs/DECISIONS.md). The access token
// lives in this module's memory only: never in storage, never in a URL. What must survive the trip
// to the provider and back (the PKCE verifier and the state) waits in sessionStorage, and is
// removed as soon as the code is traded.

const PENDING = 'bed-board.sign-in'
const RENEW_BEFORE_MS = 60_000

let settings = null // { issuer, clientId, scope } from the service, or null: no provider
let endpoints = null
let current = null // { accessToken, refreshToken, expiresAt }
let renewTimer = null
let onChange = () => {}

const redirectUri = () => `${location.origin}/board`

function base64url(bytes) {
  let text = ''
  for (const byte of new Uint8Array(bytes)) text += String.fromCharCode(byte)
  return btoa(text).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

const randomText = () => base64url(crypto.getRandomValues(new Uint8Array(32)))

async function discover() {
  if (endpoints) return endpoints
  const url = `${settings.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`
  const res = await fetch(url, { headers: { accept: 'application/json' } })
  if (!res.ok) throw new Error(`the identity provider answered ${res.status}`)
  const doc = await res.json()
  if (doc.issuer !== settings.issuer) throw new Error('the identity provider names another issuer')
  endpoints = doc
  return doc
}

/** Asks the service whether the board signs in with a provider; true when it does. */
export async function loadSignIn(changed) {
  onChange = changed
  const res = await fetch('/board/sign-in', { headers: { accept: 'application/json' } })
  settings = res.ok ? (await res.json()).provider : null
  return settings !== null
}

export const providerToken = () => current?.accessToken ?? null

/** Leaves for the provider's sign-in page; it comes back to /board with a code. */
export async function beginSignIn(facility) {
  const { authorization_endpoint: authorize } = await discover()
  const verifier = randomText()
  const state = randomText()
  const challenge = base64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)))
  sessionStorage.setItem(PENDING, JSON.stringify({ verifier, state, facility }))
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: settings.clientId,
    redirect_uri: redirectUri(),
    scope: settings.scope,
    state,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  })
  location.assign(`${authorize}?${query}`)
}

async function tokenRequest(body) {
  const { token_endpoint: tokenEndpoint } = await discover()
  const res = await fetch(tokenEndpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams({ client_id: settings.clientId, ...body }),
  })
  const answer = await res.json().catch(() => ({}))
  if (!res.ok || typeof answer.access_token !== 'string')
    throw new Error(answer.error_description || answer.error || `the identity provider answered ${res.status}`)
  keep(answer)
}

function keep(answer) {
  const lifetimeMs = (Number(answer.expires_in) || 300) * 1000
  current = {
    accessToken: answer.access_token,
    refreshToken: answer.refresh_token ?? current?.refreshToken ?? null,
    expiresAt: Date.now() + lifetimeMs,
  }
  clearTimeout(renewTimer)
  // Renewed a minute before it expires (or halfway, for a short token); without a refresh token the
  // person is sent to the provider again, which signs them straight back in while its session lasts.
  const wait = Math.max(5_000, Math.min(lifetimeMs - RENEW_BEFORE_MS, lifetimeMs / 2))
  renewTimer = setTimeout(renew, wait)
}

async function renew() {
  if (!current) return
  if (!current.refreshToken) return beginSignIn(sessionStorage.getItem('bed-board.facility'))
  try {
    await tokenRequest({ grant_type: 'refresh_token', refresh_token: current.refreshToken })
    onChange(true)
  } catch {
    current.refreshToken = null
    beginSignIn(sessionStorage.getItem('bed-board.facility'))
  }
}

/**
 * On the way back from the provider: trades the code for a token. Returns the facility asked for
 * before leaving (undefined when this load is not a return), and throws what went wrong.
 */
export async function finishSignIn() {
  const params = new URLSearchParams(location.search)
  if (!params.has('code') && !params.has('error')) return undefined
  const pending = JSON.parse(sessionStorage.getItem(PENDING) ?? 'null')
  sessionStorage.removeItem(PENDING)
  // The code must not stay in the address bar, the history or a bookmark.
  history.replaceState(null, '', '/board')
  if (params.has('error')) throw new Error(params.get('error_description') || params.get('error'))
  if (!pending || params.get('state') !== pending.state) throw new Error('the sign-in answer does not match this tab')
  await tokenRequest({
    grant_type: 'authorization_code',
    code: params.get('code'),
    redirect_uri: redirectUri(),
    code_verifier: pending.verifier,
  })
  return pending.facility ?? ''
}

/** Forgets the token here; the provider's own session ends with its sign-out page. */
export function forgetSignIn() {
  current = null
  clearTimeout(renewTimer)
}
