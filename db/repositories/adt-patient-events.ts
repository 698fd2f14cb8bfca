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
  // Only the rows filed under the A50's facility: another facility's messages of the same visit
  // number are its own (the number names another visit there).
  const renumberApplied = db.prepare<[string, string, string | null]>(
    `UPDATE hl7_messages SET encounter = ? WHERE encounter = ? AND status = 'applied' AND facility IS ?`,
  )
  const renumberOthers = db.prepare<[string, string, string | null]>(
    `UPDATE hl7_messages SET encounter = ? WHERE status IN ('parked', 'dismissed') AND encounter = ? AND facility IS ?`,
  )
  return {
    ofPatient: (patient: string, facility: string | null): Row[] => ofPatient.all(patient, facility),
    /** Later messages of the visit (their out-of-order check, a parked one's retry) find it under `to`. */
    renumberLog(from: string, to: string, facility: string | null): void {
      renumberApplied.run(to, from, facility)
      renumberOthers.run(to, from, facility)
    },
  }
}
