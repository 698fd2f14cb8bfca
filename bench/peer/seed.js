// Seeds the peer's database from the service's freshly seeded one (bench/seed.js), before the
// service has started on it: the very same occupant rows, ids included, so the scenarios' sample
// of ids and the discharge pool serve both; and the same bearer tokens.
import { createHash } from 'node:crypto'
import BetterSqlite3 from 'better-sqlite3'
import { FACILITIES, facilityName } from '../seed.js'
import { PEER_SCHEMA } from './schema.js'

export const tokenHash = (token) => createHash('sha256').update(token).digest('base64')

/** The tokens bench/seed.js made, with what each stands for there. */
function tokenRows(tokens) {
  const rows = [
    [tokens.admin, 'bench-admin', 'admin', null],
    [tokens.write, 'bench-writer', 'write', null],
  ]
  for (let f = 0; f < FACILITIES; f++) {
    rows.push([tokens.facility[f], `nurse-${f}`, 'write', facilityName(f)])
    tokens.readers[f].forEach((token, k) => {
      rows.push([token, `reader-${f}-${k}`, 'read', facilityName(f)])
    })
  }
  return rows
}

export function seedPeer(path, servicePath, tokens) {
  const started = performance.now()
  const db = new BetterSqlite3(path)
  try {
    db.pragma('journal_mode = OFF')
    db.pragma('synchronous = OFF')
    db.exec(PEER_SCHEMA)
    db.prepare('ATTACH DATABASE ? AS service').run(servicePath)
    db.transaction(() => {
      db.exec(
        `INSERT INTO ward_occupants (id, version, createdAt, createdBy, facility, encounter, room, bed, provider,
           occupiedAt, occupiedBy, dischargedAt, dischargedBy)
         SELECT id, version, created_at, created_by, facility, encounter, room, bed, provider,
           occupied_at, occupied_by, discharged_at, discharged_by FROM service.ward_occupants`,
      )
      const insert = db.prepare('INSERT INTO tokens (hash, account, role, facility) VALUES (?, ?, ?, ?)')
      for (const [token, ...rest] of tokenRows(tokens)) insert.run(tokenHash(token), ...rest)
    })()
    db.exec('DETACH DATABASE service')
    const { count } = db.prepare('SELECT count(*) AS count FROM ward_occupants').get()
    db.pragma('journal_mode = WAL')
    return { count, seconds: (performance.now() - started) / 1000 }
  } finally {
    db.close()
  }
}
