import { PreconditionFailedError } from './errors.js'

/** The ETag of a record version. Strong, quoted, as RFC 9110 wants it. */
export function etagFor(version: number): string {
  return `"${version}"`
}

/**
 * The If-Match precondition as the repositories check it inside their write transaction:
 * null means no header (proceed); otherwise one of the listed tags must be current, or `*`.
 */
export type IfMatch = string[] | null

export function parseIfMatch(header: string | undefined): IfMatch {
  if (header === undefined) return null
  return header
    .split(',')
    .map((tag) => tag.trim())
    .filter((tag) => tag.length > 0)
}

export function assertVersion(ifMatch: IfMatch, resource: string, id: string, version: number): void {
  if (ifMatch === null || ifMatch.includes('*')) return
  const current = etagFor(version)
  if (!ifMatch.includes(current)) throw new PreconditionFailedError(resource, id, current)
}
