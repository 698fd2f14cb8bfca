// Seeds a fresh benchmark database directly with better-sqlite3, before the server starts.
// Going through HTTP would take minutes for a million occupants; here the rows are written with
// the same columns the repository writes (schema.sql, migration 2), in one transaction, with the
// journal off while seeding and WAL switched on at the end (the server expects WAL).
// Notifications are written the same way (seed-notifications.js); tokens go through the compiled
// repository, so their rules stay theirs.
import BetterSqlite3 from 'better-sqlite3'
import { applyBedPolicy } from '../dist/db/bed-policy.js'
import { migrate } from '../dist/db/migrations.js'
import { createTokenRepository } from '../dist/db/repositories/tokens.js'
import { newId } from '../dist/lib/ids.js'
import { seedNotificationRows } from './seed-notifications.js'

export const FACILITIES = 10
export const BEDS_PER_FACILITY = 200
export const READERS_PER_FACILITY = 100
const DAY = 86_400_000

export const facilityName = (f) => `ward-${f}`
export const bedName = (b) => `B-${b}`

/**
 * Ward occupants as a hospital accumulates them: a fixed set of beds (10 facilities x 200 beds),
 * each with a history of discharged occupants and, as its newest record, one active occupant.
 * More occupants mean a longer history per bed, not more beds, which is how the table grows.
 * Returns a sample of ids (for get-by-id) with their facility, and the active ids.
 */
function seedOccupants(db, count, now) {
  const beds = FACILITIES * BEDS_PER_FACILITY
  const insert = db.prepare(
    `INSERT INTO ward_occupants (id, version, created_at, created_by, facility, encounter, room, bed, provider,
       occupied_at, occupied_by, discharged_at, discharged_by)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  const start = now - 730 * DAY
  const step = Math.max(1, Math.floor((730 * DAY - DAY) / count))
  const sampleEvery = Math.max(1, Math.floor(count / 50_000))
  const sample = []
  const active = []
  db.transaction(() => {
    for (let i = 0; i < count; i++) {
      const slot = i % beds
      const f = slot % FACILITIES
      const b = Math.floor(slot / FACILITIES)
      const at = start + i * step
      const isActive = i >= count - beds
      const id = newId(at)
      insert.run(
        id,
        isActive ? 1 : 2,
        at,
        `nurse-${f}`,
        facilityName(f),
        `enc-${i}`,
        `R-${Math.floor(b / 4)}`,
        bedName(b),
        i % 3 === 0 ? null : `dr-${i % 50}`,
        at,
        `patient-${i % 100_003}`,
        isActive ? null : at + step * (beds - 1),
        isActive ? null : `nurse-${f}`,
      )
      if (i % sampleEvery === 0) sample.push({ id, facility: f })
      if (isActive) active.push({ id, facility: f })
    }
  })()
  return { sample, active }
}

/**
 * Active occupants for the discharge scenario to discharge, each once, in a ward of their own
 * ('ward-pool', beds P-<n>) that no list or get of the other scenarios reads.
 */
function seedPatchPool(db, count, now) {
  const insert = db.prepare(
    `INSERT INTO ward_occupants (id, created_at, created_by, facility, encounter, room, bed, provider, occupied_at, occupied_by)
     VALUES (?, ?, 'nurse-pool', 'ward-pool', ?, 'R-pool', ?, 'dr-1', ?, ?)`,
  )
  const ids = []
  db.transaction(() => {
    for (let i = 0; i < count; i++) {
      const at = now - DAY + i
      const id = newId(at)
      insert.run(id, at, `enc-pool-${i}`, `P-${i}`, at, `patient-pool-${i}`)
      ids.push(id)
    }
  })()
  return ids
}

function seedNotifications(db, count, now) {
  return seedNotificationRows(db, count, now, FACILITIES)
}

/**
 * Creates the schema, the tokens the scenarios use and the data. Form templates are seeded later
 * through HTTP (2 000 are quick), so their validation and id generation stay the service's.
 */
export async function seedDatabase(path, { occupants, notifications, patchPool = 0 }) {
  const db = new BetterSqlite3(path)
  db.pragma('journal_mode = OFF')
  db.pragma('synchronous = OFF')
  const now = Date.now()
  try {
    migrate(db)
    const tokens = createTokenRepository(db)
    const make = (account, role, facility = null) =>
      tokens.create({ account, role, facility, label: `bench ${account}` }).token
    const seededTokens = {
      admin: make('bench-admin', 'admin'),
      write: make('bench-writer', 'write'),
      facility: Array.from({ length: FACILITIES }, (_, f) => make(`nurse-${f}`, 'write', facilityName(f))),
      // Readers of each ward for the mark-seen scenario: with 2 000 notifications each, 200 000
      // pairs per ward, so every mark of a run is a first one (a real write), at any size.
      readers: Array.from({ length: FACILITIES }, (_, f) =>
        Array.from({ length: READERS_PER_FACILITY }, (_, k) => make(`reader-${f}-${k}`, 'read', facilityName(f))),
      ),
    }
    const started = performance.now()
    const { sample, active } = seedOccupants(db, occupants, now)
    const pool = seedPatchPool(db, patchPool, now)
    const occupantSeconds = (performance.now() - started) / 1000
    const notifyStarted = performance.now()
    const notified = seedNotifications(db, notifications, now)
    notified.seconds = (performance.now() - notifyStarted) / 1000
    // The index a server makes at its first start (one active occupant per bed), made here: the
    // service then starts as after any restart, instead of reading the whole pool to build it
    // while its RSS idle after start is read (it filled the page cache: +32 MB).
    applyBedPolicy(db, 'exclusive')
    // No ANALYZE: a database grown through the service has none either, so the planner sees what it sees in production.
    db.pragma('journal_mode = WAL')
    return { tokens: seededTokens, sample, active, pool, occupantSeconds, notifications: notified }
  } finally {
    db.close()
  }
}
