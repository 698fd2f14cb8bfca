import type { ExpectationRow } from '../db/repositories/bed-state-reads.js'
import type { WardOccupant } from '../schemas/ward-occupants.js'
import type { Resource } from './bundle.js'
import { fhirId } from './ids.js'
import { bedId, LOCATION_SYSTEMS, NO_FACILITY_NAME } from './location.js'
import { withMeta } from './meta.js'
import { instant } from './search.js'

/**
 * An encounter as a FHIR Encounter (docs/FHIR.md): the stays (ward-occupant records) of one
 * encounter number in one facility, oldest first, each a location[] entry, then the beds it is
 * expected in (A14, A15), each a `planned` entry. Without a stay it is a planned Encounter. Pure.
 */
export const ACT_CODE_SYSTEM = 'http://terminology.hl7.org/CodeSystem/v3-ActCode'

const CLASS_DISPLAY: Readonly<Record<string, string>> = {
  IMP: 'inpatient encounter',
  ACUTE: 'inpatient acute',
  NONAC: 'inpatient non-acute',
  SS: 'short stay',
  OBSENC: 'observation encounter',
  EMER: 'emergency',
  AMB: 'ambulatory',
  HH: 'home health',
  VR: 'virtual',
  PRENC: 'pre-admission',
  FLD: 'field',
}

export interface EncounterSystems {
  patient: string
  practitioner: string
  encounter: string
  /** The Encounter.class code (v3 ActCode). */
  classCode: string
}

export const encounterId = (facility: string | null, encounter: string) =>
  fhirId('encounter', [facility ?? '', encounter])

export type EncounterStatus = 'planned' | 'in-progress' | 'finished'

export interface EncounterView {
  facility: string | null
  encounter: string
  status: EncounterStatus
  /** null for a planned encounter: it has no period yet */
  start: number | null
  /** null while a stay is active, and for a planned encounter */
  end: number | null
  lastUpdated: number
  /** The beds of the stays and expectations (their Location ids), and the current ones: active or expected. */
  beds: string[]
  currentBeds: string[]
  /** null when no stay names the patient (a pending admission: the ward is not told who) */
  subject: string | null
  resource: Resource
}

export interface EncounterRecords {
  facility: string | null
  encounter: string
  /** every stay of the encounter in the facility, ordered by occupiedAt then id */
  stays: readonly WardOccupant[]
  /** its live expectations of beds in the facility; at least one when there is no stay */
  expectations: readonly ExpectationRow[]
}

const periodOf = (start: number | null, end: number | null) =>
  start === null ? {} : { period: { start: instant(start), ...(end === null ? {} : { end: instant(end) }) } }

export function toEncounter(records: EncounterRecords, systems: EncounterSystems): EncounterView {
  const { facility, stays, expectations } = records
  const latest = stays.at(-1)
  if (latest === undefined && expectations.length === 0)
    throw new Error('an encounter has at least one stay or expectation')
  const active = stays.filter((s) => s.dischargedAt === undefined)
  const start = latest === undefined ? null : Math.min(...stays.map((s) => s.occupiedAt))
  const end = latest === undefined || active.length > 0 ? null : Math.max(...stays.map((s) => s.dischargedAt as number))
  const status: EncounterStatus = latest === undefined ? 'planned' : active.length > 0 ? 'in-progress' : 'finished'
  const providers = [...new Set(stays.map((s) => s.provider).filter((p): p is string => p !== undefined))]
  const resource: Resource = {
    resourceType: 'Encounter',
    id: encounterId(facility, records.encounter),
    identifier: [{ system: systems.encounter, value: records.encounter }],
    status,
    class: {
      system: ACT_CODE_SYSTEM,
      code: systems.classCode,
      display: CLASS_DISPLAY[systems.classCode] ?? systems.classCode,
    },
    // The latest stay's patient: after a merge the earlier stays are relabelled too. An expectation
    // names no patient, so a planned encounter has no subject (Encounter.subject is 0..1).
    ...(latest === undefined
      ? {}
      : {
          subject: { identifier: { system: systems.patient, value: latest.occupiedBy }, display: latest.occupiedBy },
        }),
    ...(providers.length === 0
      ? {}
      : {
          participant: providers.map((provider) => ({
            individual: { identifier: { system: systems.practitioner, value: provider }, display: provider },
          })),
        }),
    ...periodOf(start, end),
    location: [
      ...stays.map((stay) => ({
        location: { reference: `Location/${bedId(facility, stay.bed)}`, display: stay.bed },
        status: stay.dischargedAt === undefined ? 'active' : 'completed',
        period: {
          start: instant(stay.occupiedAt),
          ...(stay.dischargedAt === undefined ? {} : { end: instant(stay.dischargedAt) }),
        },
      })),
      // No period: the patient has not been there yet (the expectation's time is meta.lastUpdated).
      ...expectations.map((expected) => ({
        location: { reference: `Location/${bedId(facility, expected.bed)}`, display: expected.bed },
        status: 'planned',
      })),
    ],
    serviceProvider:
      facility === null
        ? { display: NO_FACILITY_NAME }
        : { identifier: { system: LOCATION_SYSTEMS.ward, value: facility }, display: facility },
  }
  const lastUpdated = Math.max(
    ...stays.map((s) => Math.max(s.createdAt, s.occupiedAt, s.dischargedAt ?? 0)),
    ...expectations.map((e) => e.since),
  )
  const expectedBeds = expectations.map((e) => bedId(facility, e.bed))
  return {
    facility,
    encounter: records.encounter,
    status,
    start,
    end,
    lastUpdated,
    beds: [...new Set([...stays.map((s) => bedId(facility, s.bed)), ...expectedBeds])],
    currentBeds: [...new Set([...active.map((s) => bedId(facility, s.bed)), ...expectedBeds])],
    subject: latest?.occupiedBy ?? null,
    resource: withMeta(resource, lastUpdated),
  }
}
