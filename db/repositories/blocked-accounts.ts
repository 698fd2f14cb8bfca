import type { Database } from 'better-sqlite3'
import { dataVersionOf, endReadSnapshot } from '../data-version.js'

export interface BlockedAccount {
  account: string
  blockedAt: number
  reason: string | null
}

interface Row {
  account: string
  blocked_at: number
  reason: string | null
}

/**
 * Accounts an administrator blocked (`facility-service account block`): refused whatever token
 * they present, service or provider. `isBlocked` is asked on every request, so the set is kept in
 * memory and read again only when another connection has committed (PRAGMA data_version, as in
 * db/token-cache.ts): a block from the CLI counts on the running server's very next request.
 */
export function createBlockedAccounts(db: Database) {
  const dataVersion = dataVersionOf(db)
  const all = db.prepare<[], Row>('SELECT * FROM blocked_accounts ORDER BY blocked_at, account')
  const insert = db.prepare(
    'INSERT INTO blocked_accounts (account, blocked_at, reason) VALUES (?, ?, ?) ON CONFLICT DO NOTHING',
  )
  const remove = db.prepare('DELETE FROM blocked_accounts WHERE account = ?')
  let blocked = new Set<string>()
  let version: number | undefined

  function isBlocked(account: string): boolean {
    const current = dataVersion()
    if (current !== version) {
      blocked = new Set(all.all().map((row) => row.account))
      version = current
    }
    return blocked.has(account)
  }

  return {
    isBlocked,
    /** False when the account was blocked already. */
    block(account: string, reason: string | null = null, now = Date.now()): boolean {
      version = undefined // this connection's own commit does not change its data_version
      endReadSnapshot(db)
      return insert.run(account, now, reason).changes === 1
    },
    /** False when the account was not blocked. */
    unblock(account: string): boolean {
      version = undefined
      endReadSnapshot(db)
      return remove.run(account).changes === 1
    },
    list(): BlockedAccount[] {
      return all.all().map((row) => ({ account: row.account, blockedAt: row.blocked_at, reason: row.reason }))
    },
  }
}

export type BlockedAccounts = ReturnType<typeof createBlockedAccounts>
