import type { Database } from 'better-sqlite3'

export type BedPolicy = 'exclusive' | 'shared'

export const ACTIVE_BED_INDEX = 'ward_occupants_active_bed'

/**
 * One bed, one active occupant, held by a partial unique index so it survives any interleaving
 * of requests. `shared` drops the index. Switching back to `exclusive` fails with a clear message
 * while some bed still has two active occupants.
 */
export function applyBedPolicy(db: Database, policy: BedPolicy): void {
  if (policy === 'shared') {
    db.exec(`DROP INDEX IF EXISTS ${ACTIVE_BED_INDEX}`)
    return
  }
  // With the index in place no bed can have two active occupants: the check below would read every
  // active occupant at each start (into the page cache) only to find none.
  if (db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'index' AND name = ?").get(ACTIVE_BED_INDEX)) return
  const clash = db
    .prepare(
      `SELECT facility, bed FROM ward_occupants WHERE discharged_at IS NULL
       GROUP BY ifnull(facility, ''), bed HAVING count(*) > 1 LIMIT 1`,
    )
    .get() as { facility: string | null; bed: string } | undefined
  if (clash) {
    throw new Error(
      `BED_POLICY=exclusive cannot be enforced: bed ${clash.bed} of facility ${clash.facility ?? '(none)'} ` +
        'has more than one active occupant; discharge the extra ones or keep BED_POLICY=shared',
    )
  }
  db.exec(
    `CREATE UNIQUE INDEX IF NOT EXISTS ${ACTIVE_BED_INDEX}
     ON ward_occupants (ifnull(facility, ''), bed) WHERE discharged_at IS NULL`,
  )
}
