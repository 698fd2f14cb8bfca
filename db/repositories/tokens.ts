import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { Database } from 'better-sqlite3'
import {
  type Principal,
  type Role,
  serviceAccountProblem,
  type TokenRefusal,
  tokenRefusal,
} from '../../domain/principal.js'
import { newId } from '../../lib/ids.js'

export interface TokenInfo extends Principal {
  label: string | null
  createdAt: number
  expiresAt: number | null
  revokedAt: number | null
}

export interface NewToken {
  account: string
  role: Role
  facility?: string | null
  label?: string | null
  expiresAt?: number | null
}

export type TokenCheck =
  | { ok: true; principal: Principal }
  | {
      ok: false
      reason: TokenRefusal
      /** Set when the id exists but the secret is wrong: the failure counts against that id too. */
      wrongSecretFor?: string
    }

interface TokenRow {
  id: string
  secret_hash: Buffer
  account: string
  role: Role
  facility: string | null
  label: string | null
  created_at: number
  expires_at: number | null
  revoked_at: number | null
}

// The token carries its own id so the lookup is by primary key and the secret is then compared in
// constant time; only a hash of the secret is stored.
const TOKEN_FORMAT = /^fs_([0-9a-f]{24})_([A-Za-z0-9_-]{43})$/

function hashSecret(secret: string): Buffer {
  return createHash('sha256').update(secret).digest()
}

function toInfo(row: TokenRow): TokenInfo {
  return {
    tokenId: row.id,
    account: row.account,
    role: row.role,
    facility: row.facility,
    label: row.label,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
  }
}

export function createTokenRepository(db: Database) {
  const insert = db.prepare(
    `INSERT INTO tokens (id, secret_hash, account, role, facility, label, created_at, expires_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  const byId = db.prepare<[string], TokenRow>('SELECT * FROM tokens WHERE id = ?')
  const all = db.prepare<[], TokenRow>('SELECT * FROM tokens ORDER BY created_at, id')
  const revokeStmt = db.prepare('UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL')
  const countStmt = db.prepare<[], { n: number }>('SELECT count(*) AS n FROM tokens')

  function create(input: NewToken, now = Date.now()): { token: string; info: TokenInfo } {
    const problem = serviceAccountProblem(input.account)
    if (problem !== null) throw new RangeError(`account ${problem}`)
    const id = newId(now)
    const secret = randomBytes(32).toString('base64url')
    insert.run(
      id,
      hashSecret(secret),
      input.account,
      input.role,
      input.facility ?? null,
      input.label ?? null,
      now,
      input.expiresAt ?? null,
    )
    const row = byId.get(id) as TokenRow
    return { token: `fs_${id}_${secret}`, info: toInfo(row) }
  }

  /** Reads the database on every call, so a revocation from the CLI counts on the next request. */
  function check(token: string, now = Date.now()): TokenCheck {
    const match = TOKEN_FORMAT.exec(token)
    if (!match) return { ok: false, reason: 'malformed' }
    const [, id, secret] = match as unknown as [string, string, string]
    const row = byId.get(id)
    const presented = hashSecret(secret)
    if (!row) {
      // Same work as a real comparison, so a missing id takes as long as a wrong secret.
      timingSafeEqual(presented, presented)
      return { ok: false, reason: 'unknown' }
    }
    if (!timingSafeEqual(presented, row.secret_hash)) return { ok: false, reason: 'unknown', wrongSecretFor: row.id }
    const refusal = tokenRefusal({ revokedAt: row.revoked_at, expiresAt: row.expires_at }, now)
    if (refusal !== null) return { ok: false, reason: refusal }
    return { ok: true, principal: { tokenId: row.id, account: row.account, role: row.role, facility: row.facility } }
  }

  function list(): TokenInfo[] {
    return all.all().map(toInfo)
  }

  function get(id: string): TokenInfo | undefined {
    const row = byId.get(id)
    return row && toInfo(row)
  }

  /** Returns false when no active token has that id. */
  function revoke(id: string, now = Date.now()): boolean {
    return revokeStmt.run(now, id).changes === 1
  }

  function count(): number {
    return (countStmt.get() as { n: number }).n
  }

  return { create, check, list, get, revoke, count }
}

export type TokenRepository = ReturnType<typeof createTokenRepository>
