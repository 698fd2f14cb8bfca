// The session (token and facility, this tab only) and calls to the service with the token.
import { forgetSignIn, providerToken } from './sign-in.js'

const TOKEN = 'bed-board.token'
const FACILITY = 'bed-board.facility'
const PRIVACY = 'bed-board.privacy'

export const session = {
  /** A token from the provider (in memory only) or, for a screen with no person, a pasted one. */
  get token() {
    return providerToken() ?? sessionStorage.getItem(TOKEN)
  },
  get facility() {
    return sessionStorage.getItem(FACILITY) || null
  },
  /** Privacy is on unless this tab turned it off: a corridor screen shows no ids by default. */
  get privacy() {
    return sessionStorage.getItem(PRIVACY) !== 'off'
  },
  set privacy(on) {
    sessionStorage.setItem(PRIVACY, on ? 'on' : 'off')
  },
  signIn(token, facility) {
    sessionStorage.setItem(TOKEN, token)
    if (facility) sessionStorage.setItem(FACILITY, facility)
    else sessionStorage.removeItem(FACILITY)
  },
  /** Signed in with the provider: only the facility is kept in the tab, the token in memory. */
  signedInWithProvider(facility) {
    sessionStorage.removeItem(TOKEN)
    if (facility) sessionStorage.setItem(FACILITY, facility)
    else sessionStorage.removeItem(FACILITY)
  },
  signOut() {
    forgetSignIn()
    sessionStorage.removeItem(TOKEN)
    sessionStorage.removeItem(FACILITY)
  },
}

/** An answer that is not a 2xx, with the service's error message and code. */
export class ApiError extends Error {
  constructor(status, body) {
    super(body?.message ?? `the service answered ${status}`)
    this.status = status
    this.code = body?.code
  }
}

/** A call with the token in the Authorization header (never in the URL). */
export async function api(path, { method = 'GET', query } = {}) {
  const url = query ? `${path}?${new URLSearchParams(query)}` : path
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${session.token}`, accept: 'application/json' },
    cache: 'no-store',
  })
  const body = await res.json().catch(() => null)
  if (!res.ok) throw new ApiError(res.status, body)
  return body
}
