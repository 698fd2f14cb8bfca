import type { Database } from 'better-sqlite3'
import type { MessageHeader } from '../../domain/adt-message.js'
import type { Hl7MessageRow } from './hl7-message-row.js'

/** What a received message is, against the log: new, a resend of one answered, or a reused control id. */
export type Sighting =
  | { kind: 'new' }
  /** Same sender, control id and content (or the logged one has no digest): its stored ACK again. */
  | { kind: 'resend'; row: Hl7MessageRow }
  /** Same sender and control id, other content: refused (AR on MSH-10); `usedBy` holds the id. */
  | { kind: 'reused'; usedBy: Hl7MessageRow }

/**
 * Exactly once by sender (MSH-3, MSH-4), control id (MSH-10) and content (docs/ADT.md): a sender
 * whose control ids restart sends new messages under old ids, and taking them for resends would
 * lose them behind the old message's AA. A row logged before migration 15 has no digest: what it
 * said cannot be compared, so the same key is a resend, as it was.
 */
export function createResendCheck(db: Database) {
  const answered = db.prepare<[string, string, string], Hl7MessageRow>(
    `SELECT * FROM hl7_messages WHERE sending_application = ? AND sending_facility = ? AND control_id = ?
       AND control_id_used_by IS NULL`,
  )
  const refused = db.prepare<[string, string], Hl7MessageRow>(
    'SELECT * FROM hl7_messages WHERE control_id_used_by = ? AND digest = ?',
  )
  return function sighting(header: MessageHeader | null, digest: string): Sighting {
    if (header === null) return { kind: 'new' }
    const stored = answered.get(header.sendingApplication, header.sendingFacility, header.controlId)
    if (!stored) return { kind: 'new' }
    if (stored.digest === null || stored.digest === digest) return { kind: 'resend', row: stored }
    // The refused message sent again gets its stored AR: one row for each content, however often.
    const again = refused.get(stored.id, digest)
    return again ? { kind: 'resend', row: again } : { kind: 'reused', usedBy: stored }
  }
}

/** The AR of a reused control id: ERR names MSH-10 with HL7 table 0357's 205, duplicate key identifier. */
export function reuseRefusal(usedBy: Hl7MessageRow) {
  return {
    errorField: 'MSH-10',
    errorCode: 205,
    error: `control id ${usedBy.control_id} (MSH-10) was already used by this sender for a different message; nothing was changed: send this message with a new control id`,
  }
}
