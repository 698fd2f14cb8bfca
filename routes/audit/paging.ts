import { InvalidQueryError, LIST_LIMITS } from '../../db/query/query.js'

export interface AuditPagingQuery {
  $limit?: string
  $skip?: string
  /** The deprecated alias of `$limit`, from before /audit took the other lists' paging. */
  limit?: string
}

/**
 * The page of /audit, with the other lists' `$limit` and `$skip` (their default and their ceiling:
 * a larger limit is lowered). `limit` still works; given beside `$limit` with another value, the
 * request is refused rather than one of them silently winning.
 */
export function auditPage(query: AuditPagingQuery): { limit: number; skip: number } {
  const { limit: alias, $limit } = query
  if (alias !== undefined && $limit !== undefined && Number(alias) !== Number($limit))
    throw new InvalidQueryError(
      `limit=${alias} and $limit=${$limit} disagree: give $limit only (limit is its deprecated alias)`,
    )
  const requested = Number($limit ?? alias ?? LIST_LIMITS.defaultLimit)
  return { limit: Math.min(requested, LIST_LIMITS.maxLimit), skip: Number(query.$skip ?? 0) }
}
