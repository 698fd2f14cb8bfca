import type { Direction, Notification } from '../../schemas/notifications.js'

/** A notification as the `notifications` table stores it (schema.sql). */
export interface NotificationRow {
  id: string
  created_at: number
  facility: string | null
  code: string
  type: string
  title: string
  body: string
  meta: string | null
  direction: Direction | null
  broadcast: 0 | 1
  unbound_only: 0 | 1
  recipients: string | null
  seen_by: string
}

/** The record the API shows: JSON columns parsed, absent optional fields left out (not null). */
export function toRecord(row: NotificationRow): Notification {
  const record: Notification = {
    id: row.id,
    createdAt: row.created_at,
    code: row.code,
    type: row.type,
    title: row.title,
    body: row.body,
    seenBy: JSON.parse(row.seen_by),
  }
  if (row.meta !== null) record.meta = JSON.parse(row.meta)
  if (row.direction !== null) record.direction = row.direction
  if (row.facility !== null) record.facility = row.facility
  if (row.recipients !== null) record.to = JSON.parse(row.recipients)
  return record
}
