import type { Database } from 'better-sqlite3'
import type { MessageHeader, WardMessage } from '../../domain/adt-message.js'
import { Hl7FacilityChangedError, Hl7NotParkedError } from '../../domain/errors.js'
import { ackWithoutDetails } from '../../domain/hl7-content.js'
import type { Principal } from '../../domain/principal.js'
import type { NewNotification } from '../../domain/ward-events.js'
import { newId } from '../../lib/ids.js'
import type { WriteQueue } from '../write-queue.js'
import { createAdminAudience } from './admin-audience.js'
import type { AdtWard } from './adt-ward.js'
import type { Hl7MessageRow, MessageStatus, Outcome, Received } from './hl7-message-row.js'
import { createResendCheck, reuseRefusal } from './hl7-resends.js'

export {
  type Hl7MessageRow,
  MESSAGE_STATUSES,
  type MessageStatus,
  type Outcome,
  type Received,
} from './hl7-message-row.js'

export interface Hl7MessageOptions {
  writes: WriteQueue
  adtWard: AdtWard
  /** Stores a notification inside the current transaction (the notification repository's create). */
  notify(notification: NewNotification): void
}

/** The principal ADT changes are made as: createdBy is hl7:<MSH-3>; the audit's token names the message. */
export function senderPrincipal(header: MessageHeader): Principal {
  return {
    tokenId: `hl7:${header.sendingApplication}/${header.controlId}`,
    account: `hl7:${header.sendingApplication}`,
    role: 'write',
    facility: null,
  }
}

function outcome(status: MessageStatus, extra: Partial<Outcome> = {}): Outcome {
  return {
    status,
    ackCode: status === 'rejected' ? 'AR' : 'AA',
    errorField: null,
    error: null,
    errorCode: null,
    parkCode: null,
    ...extra,
  }
}

/**
 * The message log and the one write that answers a message: in one write-queue job, a resend is
 * found and gets its stored ACK; anything else is applied (or parked, or ignored, or rejected) and
 * logged with its ACK, so the change, the log row and the ACK commit together and the ACK leaves
 * only once the commit is durable (the job's promise settles after the fsync).
 */
export function createHl7MessageLog(db: Database, opts: Hl7MessageOptions) {
  // Parameters by position: binding 20 by name looks each one up in the row (some 3 µs a message).
  const insertRow = db.prepare(
    `INSERT INTO hl7_messages (id, sending_application, sending_facility, control_id, message_type, event, facility,
       encounter, received_at, event_at, status, ack_code, ack, error_field, error, park_code, raw, digest,
       control_id_used_by, read_with)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  const insert = (r: Hl7MessageRow) =>
    insertRow.run(
      r.id,
      r.sending_application,
      r.sending_facility,
      r.control_id,
      r.message_type,
      r.event,
      r.facility,
      r.encounter,
      r.received_at,
      r.event_at,
      r.status,
      r.ack_code,
      r.ack,
      r.error_field,
      r.error,
      r.park_code,
      r.raw,
      r.digest,
      r.control_id_used_by,
      r.read_with,
    )
  const sighting = createResendCheck(db)
  const byId = db.prepare<[string], Hl7MessageRow>('SELECT * FROM hl7_messages WHERE id = ?')
  const resolve = db.prepare(
    `UPDATE hl7_messages SET status = :status, error = :error, park_code = :park_code, resolved_at = :at,
       resolved_by = :by WHERE id = :id`,
  )
  const listed = db.prepare<Record<string, unknown>, Hl7MessageRow>(
    `SELECT * FROM hl7_messages WHERE (:status IS NULL OR status = :status)
       AND (:facility IS NULL OR facility = :facility) ORDER BY received_at DESC, id DESC LIMIT :limit OFFSET :skip`,
  )
  const counted = db
    .prepare<Record<string, unknown>, number>(
      `SELECT count(*) FROM hl7_messages WHERE (:status IS NULL OR status = :status)
         AND (:facility IS NULL OR facility = :facility)`,
    )
    .pluck()
  // Parked messages keep everything until resolved: a retry reads the text (docs/DECISIONS.md).
  const due = db.prepare<[number], { id: string; ack: string }>(
    `SELECT id, ack FROM hl7_messages WHERE pruned_at IS NULL AND received_at < ? AND status <> 'parked' LIMIT 500`,
  )
  const forget = db.prepare(
    `UPDATE hl7_messages SET raw = NULL, encounter = NULL, error = NULL, read_with = NULL, ack = :ack,
       pruned_at = :now WHERE id = :id`,
  )
  const facilityAdmins = createAdminAudience(db)
  const { writes, adtWard } = opts

  function notifyParked(row: Hl7MessageRow): void {
    const to = facilityAdmins(row.facility)
    if (to.length === 0) return
    opts.notify({
      createdAt: row.received_at,
      facility: row.facility,
      unboundOnly: row.facility === null,
      to,
      code: 'hl7-parked',
      type: 'hl7',
      title: `ADT ${row.event ?? 'message'} parked`,
      body: `An ADT ${row.event ?? 'message'} from ${row.sending_application} was acknowledged but not applied: ${row.error}. Retry or dismiss it (GET /hl7/messages?status=parked).`,
      meta: { hl7MessageId: row.id, parkCode: row.park_code, encounter: row.encounter },
    })
  }

  function applyWard(header: MessageHeader, message: WardMessage, filedUnder?: string | null) {
    const { plan, facility } = adtWard.apply(senderPrincipal(header), message, filedUnder)
    if (plan.kind === 'park')
      return { result: outcome('parked', { error: plan.reason, parkCode: plan.code }), facility }
    return { result: outcome('applied'), facility }
  }

  function receive(input: Received): { duplicate: boolean; row: Hl7MessageRow } {
    const { reading } = input
    const header = reading.header
    const seen = sighting(header, input.digest)
    if (seen.kind === 'resend') return { duplicate: true, row: seen.row }
    let result: Outcome
    // Ignored and rejected messages are nobody's ward: only an admin bound to no facility sees them
    // (their text may name a patient of any facility, HL7_DEFAULT_FACILITY says nothing of it).
    let facility: string | null = null
    if (seen.kind === 'reused') result = outcome('rejected', reuseRefusal(seen.usedBy))
    else if (reading.kind === 'rejected')
      result = outcome('rejected', {
        errorField: reading.rejection.field,
        error: reading.rejection.reason,
        errorCode: reading.rejection.code,
      })
    else if (reading.kind === 'ignored') result = outcome('ignored')
    else ({ result, facility } = applyWard(reading.header, reading.message))
    const ward = reading.kind === 'ward' ? reading.message : null
    const row: Hl7MessageRow = {
      id: newId(input.receivedAt),
      sending_application: header?.sendingApplication ?? '',
      sending_facility: header?.sendingFacility ?? '',
      control_id: header?.controlId ?? null,
      message_type: header?.messageType || null,
      event: header?.trigger || null,
      facility,
      // An A40/A47 without PV1 names no visit, nor does an A20.
      encounter: ward?.encounter || null,
      received_at: input.receivedAt,
      event_at: ward?.eventAt ?? null,
      status: result.status,
      ack_code: result.ackCode,
      ack: input.answer(result),
      error_field: result.errorField,
      error: result.error,
      park_code: result.parkCode,
      raw: input.raw,
      resolved_at: null,
      resolved_by: null,
      digest: input.digest,
      control_id_used_by: seen.kind === 'reused' ? seen.usedBy.id : null,
      // Only a parked message is ever read again (its retry).
      read_with: result.status === 'parked' ? input.readWith : null,
      pruned_at: null,
    }
    insert(row)
    if (row.status === 'parked') notifyParked(row)
    return { duplicate: false, row }
  }

  /** A parked message applied again (an admin's retry): applied now, or still parked with today's reason. */
  /** The row, if it is still parked: a retry or dismissal raced by another admin's is refused. */
  function parked(id: string): Hl7MessageRow {
    const row = byId.get(id) as Hl7MessageRow
    if (row.status !== 'parked') throw new Hl7NotParkedError(id, row.status)
    return row
  }

  function retry(id: string, message: WardMessage, header: MessageHeader, by: string, now: number): Hl7MessageRow {
    const row = parked(id)
    // Applied only to the facility it was parked (listed, notified, authorised) under: it must still
    // concern it (else even its reason could name another) and change nothing elsewhere. Filed
    // under none, only an admin bound to no facility could see it: it goes where its encounter is.
    const concerned = adtWard.facilityOf(message)
    if (row.facility !== null && concerned !== row.facility) throw new Hl7FacilityChangedError(id, row.facility)
    const { result } = applyWard(header, message, row.facility)
    if (row.facility !== null && result.parkCode === 'other-facility')
      throw new Hl7FacilityChangedError(id, row.facility)
    const resolved = result.status === 'applied'
    resolve.run({
      id,
      status: result.status,
      error: result.error,
      park_code: result.parkCode,
      at: resolved ? now : null,
      by: resolved ? by : null,
    })
    return byId.get(id) as Hl7MessageRow
  }

  function dismiss(id: string, by: string, now: number): Hl7MessageRow {
    const row = parked(id)
    resolve.run({ id, status: 'dismissed', error: row.error, park_code: row.park_code, at: now, by })
    return byId.get(id) as Hl7MessageRow
  }

  return {
    receive: (input: Received) => writes.run(() => receive(input)),
    retry: (id: string, message: WardMessage, header: MessageHeader, by: string) =>
      writes.run(() => retry(id, message, header, by, Date.now())),
    dismiss: (id: string, by: string) => writes.run(() => dismiss(id, by, Date.now())),
    get: (id: string): Hl7MessageRow | undefined => byId.get(id),
    /** A page, newest first; `facility` non-null: that facility's only (a bound admin). */
    list(facility: string | null, status: MessageStatus | null, limit: number, skip: number) {
      const where = { facility, status }
      return { rows: listed.all({ ...where, limit, skip }), total: counted.get(where) ?? 0 }
    },
    parkedCount: (): number => counted.get({ facility: null, status: 'parked' }) ?? 0,
    /**
     * Forgets the patient of messages received before `before`, but parked ones (at most 500 a
     * call): their text, encounter, reason and the ACK's details (ackWithoutDetails). The row stays
     * for exactly-once. Returns how many.
     */
    prune(before: number): number {
      const rows = due.all(before)
      const now = Date.now()
      for (const row of rows) forget.run({ id: row.id, ack: ackWithoutDetails(row.ack), now })
      return rows.length
    },
  }
}

export type Hl7MessageLog = ReturnType<typeof createHl7MessageLog>
