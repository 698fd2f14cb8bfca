// Notifications as a hospital keeps them for years: across 50 facilities, a tenth for every
// facility, half to everyone of one facility, the rest addressed to a few accounts; about half of
// them marked seen by a nurse of their facility. Written with SQL in the columns the repository
// writes (db/notifications.ts), so a million take seconds, not the minutes the repository's
// per-row feed events would; the schema's own triggers keep the inbox counters (migration 9).
import { newId } from '../dist/lib/ids.js'

export const NOTIFICATION_FACILITIES = 50
// The same names as seed.js gives the wards with tokens (ward-0 ... ward-9).
const facilityName = (f) => `ward-${f}`
/** Ids per ward (of the ten with tokens) for the mark-seen scenario: its newest broadcasts (its own and every facility's). */
const MARK_SAMPLE = 2000

/** A spread of 0..2^32 from i, so kind, facility and seen state do not move in step. */
const mix = (i) => Math.imul(i ^ 0x9e3779b9, 0x85ebca6b) >>> 0

export function seedNotificationRows(db, count, now, wards) {
  const notification = db.prepare(
    `INSERT INTO notifications (id, created_at, facility, code, type, title, body, meta, broadcast, recipients, seen_by)
     VALUES (?, ?, ?, 'bed-occupied', 'ward', ?, ?, ?, ?, ?, ?)`,
  )
  const recipient = db.prepare(
    `INSERT INTO notification_recipients (account, notification_id, created_at, facility, unbound_only)
     VALUES (?, ?, ?, ?, 0)`,
  )
  const seen = db.prepare(
    'INSERT INTO notification_seen (notification_id, account, seen_at, facility) VALUES (?, ?, ?, ?)',
  )
  const toMark = Array.from({ length: wards }, () => [])
  db.transaction(() => {
    for (let i = 0; i < count; i++) {
      const h = mix(i)
      const f = i % NOTIFICATION_FACILITIES
      const kind = h % 10 // 0: every facility, 1-5: one facility, 6-9: addressed
      const facility = kind === 0 ? null : facilityName(f)
      const to = kind >= 6 ? [`nurse-${f}`, `nurse-${(f + 1) % NOTIFICATION_FACILITIES}`, `account-${i % 500}`] : null
      const reader = (h >>> 8) & 1 ? `nurse-${f}` : null
      const createdAt = now - (count - i) * 1000
      const id = newId(createdAt)
      const bed = `B-${i % 200}`
      notification.run(
        id,
        createdAt,
        facility,
        `Bed ${bed} occupied`,
        `Encounter enc-${i} now occupies bed ${bed}.`,
        JSON.stringify({ bed, encounter: `enc-${i}` }),
        to ? 0 : 1,
        to ? JSON.stringify(to) : null,
        reader ? JSON.stringify([reader]) : '[]',
      )
      for (const account of to ?? []) recipient.run(account, id, createdAt, facility)
      if (reader) seen.run(id, reader, createdAt, facilityName(f))
      if (kind >= 1 && kind <= 5 && f < wards) toMark[f].push(id)
      if (kind === 0) for (const ids of toMark) ids.push(id)
      if (i % 10_000 === 0) for (const [w, ids] of toMark.entries()) toMark[w] = ids.slice(-MARK_SAMPLE)
    }
  })()
  // The newest ones of each ward: what a nurse marks.
  return { count, toMark: toMark.map((ids) => ids.slice(-MARK_SAMPLE)) }
}
