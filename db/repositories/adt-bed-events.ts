import { type BedChange, type BedEventState, planBedEvent } from '../../domain/adt-bed-events.js'
import type { Location, WardMessage } from '../../domain/adt-message.js'
import { parkedElsewhere, type WardPlan, type WardState } from '../../domain/adt-ward.js'
import type { Principal } from '../../domain/principal.js'
import type { BedStateRepository } from './bed-states.js'

/**
 * Applies the ADT bed events (A14 ... A53, A20) inside the caller's write-queue job and savepoint
 * (db/repositories/adt-ward.ts): the ward's part of the state the encounter plan reads, plus the
 * bed states; the domain's plan (domain/adt-bed-events.ts); its changes made through the bed-state
 * repository, so each is audited and on the feed like a change over the API.
 */
export function createAdtBedEvents(bedStates: BedStateRepository) {
  const { reads } = bedStates
  const writes = bedStates.inTransaction

  function stateOf(base: WardState, message: WardMessage): BedEventState {
    return {
      ...base,
      knownBed: (l: Location) => reads.known(l.facility, l.bed),
      housekeepingSince: (l: Location) => reads.housekeepingOf(l.facility, l.bed)?.since ?? null,
      expectations: message.encounter === '' ? [] : reads.expectationKinds(message.encounter),
      markSince: bedStates.markSince,
    }
  }

  function make(actor: Principal, change: BedChange): void {
    switch (change.op) {
      case 'housekeeping': {
        const { facility, bed } = change.location
        writes.setHousekeeping(actor, facility, bed, change.state, null, change.at)
        return
      }
      case 'expect':
        writes.expect(actor, change.location.facility, change.location.bed, change.encounter, change.kind, change.at)
        return
      case 'unexpect':
        writes.unexpect(actor, change.encounter, change.kind)
        return
      case 'mark':
        writes.mark(actor, change.stay, change.mark, change.at)
        return
    }
  }

  /**
   * The facilities a change touches: a bed's, a stay's, and for an expectation set or cleared, those
   * of the beds expecting the encounter now (setting one clears the encounter's others).
   */
  function touched(change: BedChange, encounter: string): (string | null)[] {
    switch (change.op) {
      case 'housekeeping':
        return [change.location.facility]
      case 'expect':
        return [change.location.facility, ...bedStates.expectedIn(encounter)]
      case 'unexpect':
        return bedStates.expectedIn(encounter)
      case 'mark':
        return [change.stay.facility]
    }
  }

  /**
   * The plan, made (the caller's savepoint undoes it all if a change throws). `filedUnder`: the
   * facility the message is filed under; a change elsewhere parks it (other-facility), as for the
   * events that move patients (domain/adt-ward.ts, planWithin). Undefined: a retry of a message
   * filed under none, which goes where its encounter is.
   */
  function apply(actor: Principal, message: WardMessage, base: WardState, filedUnder?: string | null): WardPlan {
    const plan = planBedEvent(message, stateOf(base, message))
    if (plan.kind === 'park') {
      // Its reason may tell of the encounter's stay elsewhere (already in bed 4 of B, on leave).
      const elsewhere = filedUnder !== undefined && base.encounterOccupants.some((o) => o.facility !== filedUnder)
      return elsewhere ? parkedElsewhere(message, plan.code, filedUnder) : plan
    }
    const elsewhere =
      filedUnder !== undefined && plan.changes.some((c) => touched(c, message.encounter).some((f) => f !== filedUnder))
    if (elsewhere) {
      const filed = filedUnder === null ? 'no facility' : `facility ${filedUnder}`
      return {
        kind: 'park',
        code: 'other-facility',
        reason: `the ${message.event} would change a bed or stay outside ${filed}, which the message names or is filed under; nothing was changed`,
      }
    }
    for (const change of plan.changes) make(actor, change)
    // The bed events change no occupant: the encounter plan's list of changes stays empty.
    return { kind: 'apply', changes: [] }
  }

  return { apply, tellAdmittedAnyway: writes.tellAdmittedAnyway, renumber: writes.renumber }
}

export type AdtBedEvents = ReturnType<typeof createAdtBedEvents>
