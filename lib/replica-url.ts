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
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new Error(`is not a valid URL; expected ${REPLICA_FORMS}`)
  }
  const password = url.password
  if (password !== '') url.password = '***'
  const shown = url.toString()
  const secrets = password === '' ? [] : [password, safeDecode(password)]
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

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/** REPLICA_URL as it may be shown: its password hidden, whatever else is wrong with it. */
export function shownReplicaUrl(text: string): string {
  try {
    return parseReplicaUrl(text).shown
  } catch {
    return text.replace(/\/\/([^/@:]*):[^/@]*@/, '//$1:***@')
  }
}
