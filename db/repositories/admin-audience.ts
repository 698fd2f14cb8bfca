import type { Database } from 'better-sqlite3'

/**
 * The admins of a facility the service knows of, to address a notification only admins should get
 * (a parked ADT message): the owners of unrevoked admin service tokens and the provider accounts
 * last seen signing in as admins (provider_admins, migration 16), of that facility or of none
 * (every facility), less blocked accounts. A facility-bound admin of another facility is never
 * among them; an admin of the provider the service has not seen yet cannot be (docs/ADT.md).
 */
export function createAdminAudience(db: Database): (facility: string | null) => string[] {
  const admins = db
    .prepare<{ facility: string | null }, string>(
      `SELECT account FROM tokens WHERE role = 'admin' AND revoked_at IS NULL
         AND (facility IS NULL OR facility IS :facility)
       UNION SELECT account FROM provider_admins WHERE facility IS NULL OR facility IS :facility
       EXCEPT SELECT account FROM blocked_accounts
       ORDER BY 1`,
    )
    .pluck()
  return (facility) => admins.all({ facility })
}
