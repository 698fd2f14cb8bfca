import type { WardOccupant } from '../schemas/ward-occupants.js'
import type { Resource } from './bundle.js'
import { fhirId } from './ids.js'
import { bedId, LOCATION_SYSTEMS, NO_FACILITY_NAME } from './location.js'
import { withMeta } from './meta.js'
import { instant } from './search.js'

/**
 * An encounter as a FHIR Encounter (docs/FHIR.md): the stays (ward-occupant records) of one
 * encounter number in one facility, oldest first; each stay is a location[] entry. Pure.
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

export type EncounterStatus = 'in-progress' | 'finished'

export interface EncounterView {
  facility: string | null
  encounter: string
  status: EncounterStatus
  start: number
  /** null while a stay is active */
  end: number | null
  lastUpdated: number
  /** The beds of the stays (their Location ids), and of the active ones. */
  beds: string[]
  activeBeds: string[]
  subject: string
  resource: Resource
}

/** `stays`: every stay of the encounter in the facility, at least one, ordered by occupiedAt then id. */
export function toEncounter(
  facility: string | null,
  stays: readonly WardOccupant[],
  systems: EncounterSystems,
): EncounterView {
  const first = stays[0]
  const latest = stays.at(-1)
  if (first === undefined || latest === undefined) throw new Error('an encounter has at least one stay')
  const active = stays.filter((s) => s.dischargedAt === undefined)
  const start = Math.min(...stays.map((s) => s.occupiedAt))
  const end = active.length > 0 ? null : Math.max(...stays.map((s) => s.dischargedAt as number))
  const status: EncounterStatus = active.length > 0 ? 'in-progress' : 'finished'
  const providers = [...new Set(stays.map((s) => s.provider).filter((p): p is string => p !== undefined))]
  const resource: Resource = {
    resourceType: 'Encounter',
    id: encounterId(facility, first.encounter),
    identifier: [{ system: systems.encounter, value: first.encounter }],
    status,
    class: {
      system: ACT_CODE_SYSTEM,
      code: systems.classCode,
      display: CLASS_DISPLAY[systems.classCode] ?? systems.classCode,
    },
    // The latest stay's patient: after a merge the earlier stays are relabelled too.
    subject: { identifier: { system: systems.patient, value: latest.occupiedBy }, display: latest.occupiedBy },
    ...(providers.length === 0
      ? {}
      : {
          participant: providers.map((provider) => ({
            individual: { identifier: { system: systems.practitioner, value: provider }, display: provider },
          })),
        }),
    period: { start: instant(start), ...(end === null ? {} : { end: instant(end) }) },
    location: stays.map((stay) => ({
      location: { reference: `Location/${bedId(facility, stay.bed)}`, display: stay.bed },
      status: stay.dischargedAt === undefined ? 'active' : 'completed',
      period: {
        start: instant(stay.occupiedAt),
        ...(stay.dischargedAt === undefined ? {} : { end: instant(stay.dischargedAt) }),
      },
    })),
    serviceProvider:
      facility === null
        ? { display: NO_FACILITY_NAME }
        : { identifier: { system: LOCATION_SYSTEMS.ward, value: facility }, display: facility },
  }
  const lastUpdated = Math.max(...stays.map((s) => Math.max(s.createdAt, s.occupiedAt, s.dischargedAt ?? 0)))
  return {
    facility,
    encounter: first.encounter,
    status,
    start,
    end,
    lastUpdated,
    beds: [...new Set(stays.map((s) => bedId(facility, s.bed)))],
    activeBeds: [...new Set(active.map((s) => bedId(facility, s.bed)))],
    subject: latest.occupiedBy,
    resource: withMeta(resource, lastUpdated),
  }
}
