import type { Database } from 'better-sqlite3'

export interface StoredAnswer {
  tokenId: string
  key: string
  fingerprint: string
  createdAt: number
  status: number
  headers: Record<string, string>
  body: string
}

interface Row {
  token_id: string
  key: string
  fingerprint: string
  created_at: number
  status: number
  headers: string
  body: string
}

/** The answers kept for Idempotency-Key retries (migration 9), per token and key. */
export function createIdempotencyKeys(db: Database) {
  // Only answers of changes count: earlier versions also stored refusals (4xx), which a retry
  // now runs again; such a row is replaced by the next answer stored for its key, or pruned.
  const find = db.prepare<[string, string, number], Row>(
    'SELECT * FROM idempotency_keys WHERE token_id = ? AND key = ? AND created_at >= ? AND status < 300',
  )
  // An expired row of the same key, not yet pruned, is replaced: the key starts afresh.
  const save = db.prepare(
    `INSERT OR REPLACE INTO idempotency_keys (token_id, key, fingerprint, created_at, status, headers, body)
     VALUES (:tokenId, :key, :fingerprint, :createdAt, :status, :headers, :body)`,
  )
  const prune = db.prepare<[number]>('DELETE FROM idempotency_keys WHERE created_at < ?')

  return {
    /** The answer stored for the key if it is younger than `notBefore` (ms). */
    find(tokenId: string, key: string, notBefore: number): StoredAnswer | undefined {
      const row = find.get(tokenId, key, notBefore)
      if (!row) return undefined
      return {
        tokenId: row.token_id,
        key: row.key,
        fingerprint: row.fingerprint,
        createdAt: row.created_at,
        status: row.status,
        headers: JSON.parse(row.headers),
        body: row.body,
      }
    },
    /** Must run inside the transaction of the change the answer tells of. */
    save(answer: StoredAnswer): void {
      save.run({ ...answer, headers: JSON.stringify(answer.headers) })
    },
    prune: (before: number): number => prune.run(before).changes,
  }
}

export type IdempotencyKeys = ReturnType<typeof createIdempotencyKeys>
