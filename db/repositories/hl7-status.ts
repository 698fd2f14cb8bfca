import type { Database } from 'better-sqlite3'

export interface Hl7Status {
  /** Messages in the log by status (applied, ignored, parked, rejected, dismissed). */
  byStatus: Record<string, number>
  lastReceivedAt: number | null
  /** Messages whose raw text is still kept (HL7_KEEP_DAYS). */
  textsKept: number
}

/** What the ADT feed's message log holds, for `facility-service hl7 status`. */
export function readHl7Status(db: Database): Hl7Status {
  const rows = db
    .prepare<[], { status: string; n: number }>('SELECT status, count(*) AS n FROM hl7_messages GROUP BY status')
    .all()
  return {
    byStatus: Object.fromEntries(rows.map((r) => [r.status, r.n])),
    lastReceivedAt: db.prepare<[], number | null>('SELECT max(received_at) FROM hl7_messages').pluck().get() ?? null,
    textsKept: db.prepare<[], number>('SELECT count(*) FROM hl7_messages WHERE raw IS NOT NULL').pluck().get() ?? 0,
  }
}
