import type { FastifyRequest } from 'fastify'
import qs from 'qs'

/**
 * What a request log line says about the request. Query values, and anything in a path that is
 * not one of the service's own record ids, can name a patient, an encounter or a bed (filters are
 * `occupiedBy=patient-77`), and logs are usually kept longer and guarded less than the database.
 * So by default a line carries the route pattern, the record id, and the query's parameter
 * *names*; `LOG_QUERY_VALUES=true` adds the full URL for debugging (docs/SECURITY.md).
 */

// A request as the serializer may receive it: Fastify's request object or, for the few lines
// written before routing, Node's IncomingMessage.
interface LoggedRequest {
  method?: string
  url?: string
  ip?: string
  host?: string
  routeOptions?: { url?: string }
  params?: unknown
}

const RECORD_ID = /^[0-9a-f]{24}$/
// Parameter names are field names and operators (`occupiedBy`, `bed[$in][]`, `$sort[createdAt]`);
// anything else is shown as `?`, as it is not a name the service knows and could be data.
const PARAMETER_NAME = /^[A-Za-z0-9_$[\].]{1,64}$/
const MAX_NAMES = 20

function splitUrl(url: string): { path: string; query: string } {
  const at = url.indexOf('?')
  return at === -1 ? { path: url, query: '' } : { path: url.slice(0, at), query: url.slice(at + 1) }
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '))
  } catch {
    return '?'
  }
}

/**
 * Credentials by their shape, wherever they stand (a value, a key, a path, inside a longer text):
 * a stream ticket (`fst_` and 43 base64url characters, feed/tickets.ts), a token (`fs_`, its id,
 * `_`, its secret, db/repositories/tokens.ts), either cut short, and a long run of base64url
 * characters (a secret sent without its prefix). Record ids (24 hex digits) are shorter.
 */
const CREDENTIAL = /fst?_[A-Za-z0-9_-]{8,}|[A-Za-z0-9_-]{32,}/g
/**
 * A name that says its value is a secret, compared in lower case with everything but letters set
 * aside (`TICKET`, `ticket%00`, `ticket.a`, `access_token`, `X-Api-Key`): words that mark one
 * wherever they stand in a name, and short names that do only alone (`code` is OAuth's
 * authorization code, `sig` a signed URL's signature; `barcode` and `design` are not). OAuth's
 * and OpenID's own secrets are words of their own: `auth_code`, PKCE's `code_verifier`, a signed
 * `client_assertion`.
 */
const CREDENTIAL_WORD =
  /ticket|token|secret|passw|passphrase|passcode|pwd|authoriz|authcode|verifier|assertion|bearer|apikey|accesskey|privatekey|credential|session|signature|cookie/
const CREDENTIAL_NAMES = new Set(['auth', 'code', 'key', 'pass', 'pin', 'otp', 'sig', 'sid', 'jwt'])
/** Every `name=` (or `name%3D`) in a text: the name, and where its value starts. */
const PAIR_NAME = /[A-Za-z0-9_.$[\]-]+(?==|%3[dD])/g
/** Where a pair's value ends: the next parameter, a fragment, or the end of a quoted or spaced text. */
const VALUE_END = /[&;#\s"',]|%26|%3[bB]/
/** A URL's user information (`https://user:secret@host`). */
const USER_INFO = /\/\/[^/@\s?#]+@/g

function namesCredential(name: string): boolean {
  const letters = name.toLowerCase().replace(/[^a-z]/g, '')
  return CREDENTIAL_WORD.test(letters) || CREDENTIAL_NAMES.has(letters)
}

/** The values of the secret-named `name=value` pairs in a text (`a=1;password=...`, `next=/x?token=...`). */
function withoutSecretPairs(text: string): string {
  let out = ''
  let from = 0
  for (const match of text.matchAll(PAIR_NAME)) {
    const name = match[0]
    const at = match.index ?? 0
    if (at < from || !namesCredential(name)) continue
    const valueStart = at + name.length + (text[at + name.length] === '=' ? 1 : 3)
    const length = text.slice(valueStart).search(VALUE_END)
    out += `${text.slice(from, valueStart)}[redacted]`
    from = length === -1 ? text.length : valueStart + length
  }
  return out + text.slice(from)
}

/**
 * The text with every credential hidden: by its shape, by the name before it (`password=...`
 * anywhere in the text), and a URL's user information.
 */
export function withoutCredentials(text: string): string {
  return withoutSecretPairs(text).replace(USER_INFO, '//[redacted]@').replace(CREDENTIAL, '[redacted]')
}

/** The names of the query's parameters, in order, each once. */
export function queryNames(query: string): string[] {
  const names = new Set<string>()
  for (const pair of query.split('&')) {
    if (pair === '') continue
    const eq = pair.indexOf('=')
    const name = decode(eq === -1 ? pair : pair.slice(0, eq))
    names.add(PARAMETER_NAME.test(name) && withoutCredentials(name) === name ? name : '?')
    if (names.size >= MAX_NAMES) break
  }
  return [...names]
}

/** Path parameters that are record ids are kept (they name no one); any other value is hidden. */
function safeParams(params: unknown): Record<string, string> | undefined {
  if (params === null || typeof params !== 'object') return undefined
  const entries = Object.entries(params as Record<string, unknown>)
  if (entries.length === 0) return undefined
  return Object.fromEntries(
    entries.map(([name, value]) => [name, typeof value === 'string' && RECORD_ID.test(value) ? value : '[redacted]']),
  )
}

/** A path no route matched: only its first segment, as the rest may be anything a client typed. */
function unmatchedPath(path: string): string {
  const [first, ...rest] = path.split('/').slice(1)
  return withoutCredentials(`/${first ?? ''}${rest.length > 0 ? '/*' : ''}`)
}

/** A parsed query with credentials hidden: by the parameter's name, and by the shape of any text. */
function redactedQuery(value: unknown): unknown {
  if (typeof value === 'string') return withoutCredentials(value)
  if (Array.isArray(value)) return value.map(redactedQuery)
  if (value === null || typeof value !== 'object') return value
  const out: Record<string, unknown> = {}
  for (const [name, item] of Object.entries(value)) {
    out[withoutCredentials(name)] = namesCredential(name) ? '[redacted]' : redactedQuery(item)
  }
  return out
}

/**
 * The URL with its query as the service read it (`parseQuery` is the routes' own parser), every
 * credential redacted. By name: whatever spelling a client used for the parameter (`%74icket`,
 * `ticket[]`, `TICKET`, `ticket%00`, `ticket.a`), the parsed key is compared with its case and
 * everything but letters set aside. By value: a ticket or a token is hidden wherever it stands
 * (`a=1;ticket=...` is one parameter `a`), since a name can always be spelled another way.
 */
function urlWithValues(path: string, query: string, parseQuery: (text: string) => Record<string, unknown>): string {
  if (query === '') return withoutCredentials(path)
  const parsed = redactedQuery({ ...parseQuery(query) })
  const text = qs.stringify(parsed, { encode: false, arrayFormat: 'brackets' })
  // A query the parser refused (too many parameters, too deep) is not shown at all.
  return `${withoutCredentials(path)}?${text === '' ? '[not parsed]' : text}`
}

/**
 * The request serializer: `withQueryValues` is the LOG_QUERY_VALUES setting, `parseQuery` the
 * query-string parser the routes use.
 */
export function requestSerializer(withQueryValues: boolean, parseQuery: (text: string) => Record<string, unknown>) {
  return function serializeRequest(req: LoggedRequest | FastifyRequest) {
    const { path, query } = splitUrl(req.url ?? '')
    const route = req.routeOptions?.url
    const names = queryNames(query)
    return {
      method: req.method,
      route: route ?? null,
      ...(route === undefined ? { path: unmatchedPath(path) } : {}),
      ...(route !== undefined ? { params: safeParams(req.params) } : {}),
      ...(names.length > 0 ? { query: names } : {}),
      // A stream ticket is a credential: never written, even when debugging.
      ...(withQueryValues ? { url: urlWithValues(path, query, parseQuery) } : {}),
      host: req.host,
      remoteAddress: req.ip,
    }
  }
}
