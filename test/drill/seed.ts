import { openDatabase } from '../../db/connection.js'
import { createAuditLog } from '../../db/repositories/audit.js'
import { logChange } from '../../db/repositories/changes.js'
import { createFeedLog } from '../../db/repositories/feed.js'
import { createTokenRepository } from '../../db/repositories/tokens.js'
import { toRecord, type WardOccupantRow } from '../../db/repositories/ward-occupants.js'
import { newId } from '../../lib/ids.js'

/**
 * A ward's history before the drill: `count` ward occupants written straight into a new database
 * with SQL, each with its audit entry and feed event as the service writes them (one transaction,
 * seconds instead of the minutes 100 000 HTTP requests would take). Returns an admin token (it
 * writes, and reads /health's details, which are an admin's).
 */
export function seedWard(path: string, count: number): string {
  const db = openDatabase(path)
  try {
    const { token } = createTokenRepository(db).create({ account: 'drill', role: 'admin' })
    const audit = createAuditLog(db)
    const feed = createFeedLog(db)
    const insert = db.prepare(
      `INSERT INTO ward_occupants (id, version, created_at, created_by, facility, encounter, room, bed, provider,
         occupied_at, occupied_by, discharged_at, discharged_by)
       VALUES (:id, :version, :created_at, :created_by, :facility, :encounter, :room, :bed, :provider,
         :occupied_at, :occupied_by, :discharged_at, :discharged_by)`,
    )
    const actor = { account: 'seed', tokenId: 'seed', role: 'admin', facility: null } as const
    const start = Date.now() - count
    db.transaction(() => {
      for (let i = 0; i < count; i++) {
        const at = start + i
        const row: WardOccupantRow = {
          id: newId(at),
          version: 1,
          created_at: at,
          created_by: 'seed',
          facility: `ward-${i % 12}`,
          encounter: `enc-seed-${i}`,
          room: `R-${i % 400}`,
          bed: `S-${i}`,
          provider: `dr-${i % 90}`,
          occupied_at: at,
          occupied_by: `patient-seed-${i}`,
          discharged_at: null,
          discharged_by: null,
        }
        insert.run(row)
        const change = {
          resource: 'ward-occupants',
          recordId: row.id,
          facility: row.facility,
          operation: 'create',
          before: null,
          after: toRecord(row),
        } as const
        logChange({ audit, feed }, actor, change, at)
      }
    })()
    return token
  } finally {
    db.close()
  }
}
