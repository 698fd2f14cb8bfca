/**
 * REPLICA_URL (docs/OPERATIONS.md, "Standby and restore"): what it names, and how it may be shown
 * without its password.
 */
/** Where REPLICA_URL points; `path` is a directory named without a scheme. */
export type ReplicaKind = 'path' | 'file' | 'sftp' | 's3'

export interface ReplicaTarget {
  kind: ReplicaKind
  /** The URL or path as given (Litestream reads it). */
  url: string
  /** For logs and messages: the password replaced by `***`. */
  shown: string
  /** The password as written in the URL and as decoded, to scrub from Litestream's output. */
  secrets: string[]
}

const REPLICA_FORMS = 'a directory path, or a file:///..., sftp://host/path or s3://bucket/path URL'

/**
 * Reads REPLICA_URL. Litestream takes more schemes (gs://, abs://, webdav), but only these three
 * are tested here (test/drill/). Throws an Error whose message never holds the password.
 */
export function parseReplicaUrl(text: string): ReplicaTarget {
  if (!text.includes('://')) return { kind: 'path', url: text, shown: text, secrets: [] }
  const written = writtenPassword(text)
  // `user:ab/cd@host` is parsed as the host `user` (a port `ab`) and a path `/cd@host`, or refused:
  // either way the password would be taken for something else. A password's `/` and `@` must be
  // percent-encoded; saying so is clearer than an error about a port.
  if (written !== null && /[/?#@]/.test(written))
    throw new Error('has a password with / ? # or @ in it: percent-encode them (%2F %3F %23 %40)')
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new Error(`is not a valid URL; expected ${REPLICA_FORMS}`)
  }
  const password = url.password
  if (password !== '') url.password = '***'
  const secrets = password === '' ? [] : [password, safeDecode(password)]
  for (const [name, value] of url.searchParams) {
    if (!SECRET_PARAMETER.test(name)) continue
    secrets.push(value, encodeURIComponent(value))
    url.searchParams.set(name, '***')
  }
  const shown = url.toString()
  const kind = url.protocol.slice(0, -1)
  const where = url.pathname.replace(/^\/+/, '')
  if (kind === 'file') {
    if (url.host !== '' || where === '') throw new Error('file:// takes an absolute path: file:///srv/replica')
  } else if (kind === 'sftp') {
    if (url.hostname === '' || where === '') throw new Error('sftp:// needs a host and a path: sftp://user@host/path')
  } else if (kind === 's3') {
    if (url.hostname === '' || where === '') throw new Error('s3:// needs a bucket and a path: s3://bucket/path')
    if (url.username !== '')
      throw new Error(
        'credentials do not go in an s3:// URL: set LITESTREAM_ACCESS_KEY_ID and LITESTREAM_SECRET_ACCESS_KEY',
      )
  } else throw new Error(`${url.protocol}// is not supported; expected ${REPLICA_FORMS}`)
  return { kind: kind as ReplicaKind, url: text, shown, secrets }
}

// A query parameter whose value is a credential (Litestream reads some settings from the query).
const SECRET_PARAMETER = /secret|password|passwd|token|key|credential|signature/i

/**
 * The password as a person wrote it: after the first `:` of the part between `://` and the last
 * `@`. Read from the text, not the parser: a `/` or `@` in a password ends the parser's
 * user-info early, and the rest must not be shown as a host or a path. Null: no password.
 */
function writtenPassword(text: string): string | null {
  const rest = text.slice(text.indexOf('://') + 3)
  const at = rest.lastIndexOf('@')
  if (at < 0) return null
  const userInfo = rest.slice(0, at)
  const colon = userInfo.indexOf(':')
  return colon < 0 ? null : userInfo.slice(colon + 1)
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/**
 * REPLICA_URL as it may be shown: its password hidden, whatever else is wrong with it. A URL that
 * cannot be read keeps only its scheme, its user and what follows its last `@` (or, without one,
 * what precedes any query): whatever a password holds, none of it is shown.
 */
export function shownReplicaUrl(text: string): string {
  try {
    return parseReplicaUrl(text).shown
  } catch {
    if (!text.includes('://')) return text
    const scheme = text.slice(0, text.indexOf('://') + 3)
    const rest = text.slice(scheme.length)
    const at = rest.lastIndexOf('@')
    if (at < 0) return `${scheme}${rest.replace(/[?#].*$/s, '')}`
    const userInfo = rest.slice(0, at)
    const user = userInfo.includes(':') ? userInfo.slice(0, userInfo.indexOf(':')) : userInfo
    // A plain name is shown; anything else before the `@` may be a credential of its own.
    const shownUser = /^[\w.-]*$/.test(user) ? user : '***'
    return `${scheme}${shownUser}${userInfo.includes(':') ? ':***' : ''}@${rest.slice(at + 1).replace(/[?#].*$/s, '')}`
  }
}
