import type { Database } from 'better-sqlite3'
import { isBedEvent } from '../../domain/adt-bed-events.js'
import type { Location, WardMessage } from '../../domain/adt-message.js'
import { type PatientEventState, planAdt, planAdtWithin } from '../../domain/adt-patient-events.js'
import type { Occupant, WardChange, WardPlan } from '../../domain/adt-ward.js'
import type { Principal } from '../../domain/principal.js'
import { createAdtBedEvents } from './adt-bed-events.js'
import { createPatientEventStore } from './adt-patient-events.js'
import type { BedStateRepository } from './bed-states.js'
import type { WardOccupantRepository } from './ward-occupants.js'

interface OccupantRow {
  id: string
  facility: string | null
  room: string | null
  bed: string
  occupied_by: string
  provider: string | null
  occupied_at: number
  discharged_at: number | null
}

const toOccupant = (r: OccupantRow): Occupant => ({
  id: r.id,
  facility: r.facility,
  room: r.room,
  bed: r.bed,
  occupiedBy: r.occupied_by,
  provider: r.provider,
  occupiedAt: r.occupied_at,
  dischargedAt: r.discharged_at,
})

/** SQLite's BINARY order of two texts: their UTF-8 bytes (JavaScript's `<` agrees on ASCII). */
function binaryCompare(a: string, b: string): number {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the ASCII range
  if (/^[\x00-\x7f]*$/.test(a + b)) return a < b ? -1 : a > b ? 1 : 0
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'))
}

/** `a` was discharged after `b` (the same moment: the larger id, so the choice never varies). */
const endsLater = (a: OccupantRow, b: OccupantRow): boolean =>
  (a.discharged_at as number) > (b.discharged_at as number) ||
  (a.discharged_at === b.discharged_at && binaryCompare(a.id, b.id) > 0)

const latestFirst = (x: OccupantRow, y: OccupantRow): number =>
  y.occupied_at - x.occupied_at || binaryCompare(y.id, x.id)

export interface AdtWardOptions {
  wardOccupants: WardOccupantRepository
  /** The bed states: the bed events (A14 ... A53, A20) and the notice of an admission into an unavailable bed. */
  bedStates: BedStateRepository
  exclusiveBeds: boolean
  transferOnA08: boolean
}

/**
 * Applies an ADT ward message inside the caller's write-queue job: reads the part of the ward the
 * message touches, asks the domain's plan, and makes its changes through the ward-occupant
 * repository (so audit, feed, board and notifications see them as they see an API change), all
 * in a savepoint, so a plan that meets a surprise leaves nothing behind and is parked instead.
 */
export function createAdtWard(db: Database, opts: AdtWardOptions) {
  // Sorted here, not by SQLite: ORDER BY over the encounter index builds a temporary b-tree, about
  // 20 µs of every ADT message for the few stays one encounter has.
  const columns = 'id, facility, room, bed, occupied_by, provider, occupied_at, discharged_at'
  const ofEncounterRows = db.prepare<[string], OccupantRow>(`SELECT ${columns} FROM ward_occupants WHERE encounter = ?`)
  const patientEvents = createPatientEventStore<OccupantRow>(db, columns)
  /** The encounter's stays, latest first: ORDER BY occupied_at DESC, id DESC. */
  const ofEncounter = (encounter: string): OccupantRow[] => ofEncounterRows.all(encounter).sort(latestFirst)
  const activeOnBed = db.prepare<[string | null, string], OccupantRow>(
    `SELECT id, facility, room, bed, occupied_by, provider, occupied_at, discharged_at FROM ward_occupants
     WHERE facility IS ? AND bed = ? AND discharged_at IS NULL LIMIT 1`,
  )
  // The latest is picked here, not by SQLite: ORDER BY discharged_at builds a temporary b-tree
  // (and max() takes an aggregate's path), some 8 µs of every admission, for the few stays of one
  // bed that ended after a time (none, mostly).
  const dischargedAfterRows = db.prepare<[string, string | null, number, string], OccupantRow>(
    `SELECT id, facility, room, bed, occupied_by, provider, occupied_at, discharged_at FROM ward_occupants
     WHERE bed = ? AND facility IS ? AND discharged_at > ? AND id <> ?`,
  )
  // The log files an A17 under its first visit only: the second visit's stay it began (the feed's
  // stays begin at an applied event's time) keeps an older event of that visit out of order too.
  const lastApplied = db
    .prepare<{ encounter: string }, number | null>(
      `SELECT max(coalesce(logged, began), coalesce(began, logged)) FROM
         (SELECT (SELECT max(event_at) FROM hl7_messages WHERE encounter = :encounter AND status = 'applied') AS logged,
           (SELECT max(occupied_at) FROM ward_occupants WHERE encounter = :encounter AND created_by LIKE 'hl7:%') AS began)`,
    )
    .pluck()
  const writes = opts.wardOccupants.inTransaction
  const bedEvents = createAdtBedEvents(opts.bedStates)

  function stateOf(encounter: string): PatientEventState {
    return {
      encounterOccupants: ofEncounter(encounter).map(toOccupant),
      staysOf: (other) => ofEncounter(other).map(toOccupant),
      lastAppliedOf: (other) => lastApplied.get({ encounter: other }) ?? null,
      staysOfPatient: (patient, facility) => patientEvents.ofPatient(patient, facility).map(toOccupant),
      activeOnBed: (l: Location) => {
        const row = activeOnBed.get(l.facility, l.bed)
        return row ? toOccupant(row) : null
      },
      lastAppliedAt: lastApplied.get({ encounter }) ?? null,
      exclusiveBeds: opts.exclusiveBeds,
      dischargedAfter: (l: Location, at: number, except: string | null) => {
        const rows = dischargedAfterRows.all(l.bed, l.facility, at, except ?? '')
        const latest = rows.reduce<OccupantRow | null>((a, b) => (a === null || endsLater(b, a) ? b : a), null)
        return latest === null ? null : toOccupant(latest)
      },
    }
  }

  function make(actor: Principal, change: WardChange): void {
    switch (change.op) {
      case 'admit': {
        const { location: l } = change
        writes.create(actor, l.facility, {
          encounter: change.encounter,
          bed: l.bed,
          occupiedBy: change.occupiedBy,
          occupiedAt: change.occupiedAt,
          ...(l.room === null ? {} : { room: l.room }),
          ...(change.provider === null ? {} : { provider: change.provider }),
        })
        bedEvents.tellAdmittedAnyway(actor, l.facility, l.bed, change.encounter)
        return
      }
      case 'discharge':
        writes.patch(actor, change.id, { discharge: true }, null, change.at)
        return
      case 'reopen':
        writes.patch(actor, change.id, { discharge: false }, null)
        return
      case 'provider':
        writes.patch(actor, change.id, { provider: change.provider }, null)
        return
      case 'remove':
        writes.remove(actor, change.id, null)
        return
      case 'relabel':
        writes.relabel(actor, change.id, change)
        return
      case 'renumber-log':
        patientEvents.renumberLog(change.from, change.to, change.facility)
        bedEvents.renumber(actor, change.from, change.to, change.facility)
        return
    }
  }

  const applyAll = db.transaction((actor: Principal, changes: WardChange[]) => {
    for (const change of changes) make(actor, change)
  })
  const applyBedEvent = db.transaction(bedEvents.apply)

  /**
   * The plan, made. Must run inside a write-queue job. `filedUnder`: the facility the message is
   * filed under, its changes must all land there (parked otherwise); undefined at receipt, where it
   * is the facility the message concerns (returned, for the log); null for a message filed under
   * none (a retry), which goes where its encounter is.
   */
  function apply(
    actor: Principal,
    message: WardMessage,
    filedUnder?: string | null,
  ): { plan: WardPlan; facility: string | null } {
    const state = stateOf(message.encounter)
    const facility = filedUnder ?? concernedFacility(message, state.encounterOccupants[0])
    if (isBedEvent(message.event))
      return { plan: applyBedEvent(actor, message, state, filedUnder === null ? undefined : facility), facility }
    const plan =
      filedUnder === null
        ? planAdt(message, state, opts.transferOnA08)
        : planAdtWithin(message, state, opts.transferOnA08, facility)
    if (plan.kind === 'park') return { plan, facility }
    try {
      // Inside a transaction better-sqlite3 runs this as a savepoint: all or nothing.
      applyAll(actor, plan.changes)
    } catch (error) {
      const code = (error as { code?: string }).code
      // The plan read the state in this very transaction, so a conflict is a rule it did not see.
      if (code === 'BED_OCCUPIED' || code === 'ALREADY_DISCHARGED' || code === 'NOT_FOUND')
        return { plan: { kind: 'park', code: 'bed-occupied', reason: (error as Error).message }, facility }
      throw error
    }
    return { plan, facility }
  }

  return {
    apply,
    /** The facility `apply` would file the message under now (a retry checks it is still the one it was). */
    facilityOf: (message: WardMessage): string | null => concernedFacility(message, ofEncounter(message.encounter)[0]),
  }
}

/**
 * The facility a message concerns: the one it names (PV1-3.4, else HL7_DEFAULT_FACILITY), else its
 * encounter's latest stay's. Its changes must land there (planWithin).
 */
function concernedFacility(message: WardMessage, latestStay: { facility: string | null } | undefined): string | null {
  return message.facility ?? latestStay?.facility ?? null
}

export type AdtWard = ReturnType<typeof createAdtWard>
