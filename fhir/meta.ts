import { createHash } from 'node:crypto'
import type { Resource } from './bundle.js'

/**
 * meta.versionId and meta.lastUpdated of a resource made from the ward's records. The records of a
 * place or an encounter have no single version, so the version is the content's own: the first 16
 * hex digits of the SHA-256 of the resource without its meta; it changes exactly when what the
 * resource says changes. Pure.
 */
export function withMeta<T extends Resource>(resource: T, lastUpdated: number): T {
  const versionId = createHash('sha256').update(JSON.stringify(resource), 'utf8').digest('hex').slice(0, 16)
  return { ...resource, meta: { versionId, lastUpdated: new Date(lastUpdated).toISOString() } }
}

/** The weak ETag of a version (http://hl7.org/fhir/R4/http.html#versioning). */
export function etagOf(resource: Resource): string {
  return `W/"${resource.meta?.versionId ?? ''}"`
}

/** Whether If-None-Match names the resource's version (or is `*`). */
export function notModified(ifNoneMatch: string | undefined, resource: Resource): boolean {
  if (ifNoneMatch === undefined) return false
  const version = resource.meta?.versionId
  return ifNoneMatch.split(',').some((tag) => {
    const text = tag.trim()
    return text === '*' || text.replace(/^W\//, '') === `"${version}"`
  })
}
