import type { Database } from 'better-sqlite3'

/**
 * What the ADT events of domain/adt-patient-events.ts read and write besides the ward occupants'
 * own writes: a patient identifier's stays (A40, A47), and the message log following a new visit
 * number (A50), inside the message's transaction (db/repositories/adt-ward.ts).
 */
export function createPatientEventStore<Row>(db: Database, columns: string) {
  const ofPatient = db.prepare<[string, string | null], Row>(
    `SELECT ${columns} FROM ward_occupants WHERE occupied_by = ? AND facility IS ?`,
  )
  // The applied rows through their index, the parked and dismissed ones through the status index:
  // ignored and rejected messages have no encounter.
  const renumberApplied = db.prepare<[string, string]>(
    `UPDATE hl7_messages SET encounter = ? WHERE encounter = ? AND status = 'applied'`,
  )
  const renumberOthers = db.prepare<[string, string]>(
    `UPDATE hl7_messages SET encounter = ? WHERE status IN ('parked', 'dismissed') AND encounter = ?`,
  )
  return {
    ofPatient: (patient: string, facility: string | null): Row[] => ofPatient.all(patient, facility),
    /** Later messages of the visit (their out-of-order check, a parked one's retry) find it under `to`. */
    renumberLog(from: string, to: string): void {
      renumberApplied.run(to, from)
      renumberOthers.run(to, from)
    },
  }
}
