import type { Database } from 'better-sqlite3'
import type { Principal } from '../../domain/principal.js'
import { createLru } from '../../lib/lru.js'
import type { WriteQueue } from '../write-queue.js'

/** Accounts remembered as written (admin and facility, or not an admin): about a hundred bytes each. */
const REMEMBERED = 100_000

/**
 * The provider's admins as far as the service can know them (migration 16): each provider principal
 * it accepts says whether that account is an admin, and of which facility, at that moment. The
 * table changes only when that differs from what it holds, so an unchanged person costs a lookup
 * in memory per request, and the first request after a start one primary-key read.
 */
export function createProviderAdmins(db: Database, writes: WriteQueue) {
  const stored = db.prepare<[string], { facility: string | null }>(
    'SELECT facility FROM provider_admins WHERE account = ?',
  )
  const upsert = db.prepare(
    `INSERT INTO provider_admins (account, facility, recorded_at) VALUES (?, ?, ?)
     ON CONFLICT (account) DO UPDATE SET facility = excluded.facility, recorded_at = excluded.recorded_at`,
  )
  const remove = db.prepare('DELETE FROM provider_admins WHERE account = ?')
  const written = createLru<string>(REMEMBERED, Number.POSITIVE_INFINITY, () => 0)

  const stateOf = (role: string, facility: string | null) => (role === 'admin' ? `admin ${facility ?? '*'}` : 'none')

  /**
   * Records what a provider principal says of its account; null when the table already says it.
   * The write joins the next group commit; a failed one (a full disk) is tried again on the next
   * request.
   */
  function saw(principal: Pick<Principal, 'account' | 'role' | 'facility'>, now = Date.now()): Promise<void> | null {
    const { account, role, facility } = principal
    const state = stateOf(role, facility)
    if (written.get(account) === state) return null
    const row = stored.get(account)
    if ((row === undefined ? 'none' : stateOf('admin', row.facility)) === state) {
      written.set(account, state)
      return null
    }
    written.set(account, state)
    return writes
      .run(() => {
        if (role === 'admin') upsert.run(account, facility, now)
        else remove.run(account)
      })
      .catch((error: unknown) => {
        written.set(account, '')
        throw error
      })
  }

  return { saw }
}

export type ProviderAdmins = ReturnType<typeof createProviderAdmins>
