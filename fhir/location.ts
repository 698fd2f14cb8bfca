import type { BedState } from '../db/repositories/beds.js'
import type { Resource } from './bundle.js'
import { fhirId } from './ids.js'
import { withMeta } from './meta.js'

/**
 * The ward's places as FHIR Locations (docs/FHIR.md): the facility is the ward (physicalType wa),
 * its rooms (ro, partOf the ward) and its beds (bd, partOf their room, else the ward), with the
 * bed's operationalStatus from its state (HL7 table 0116). Pure: the caller reads the beds.
 */
export const PHYSICAL_TYPE_SYSTEM = 'http://terminology.hl7.org/CodeSystem/location-physical-type'
export const BED_STATUS_SYSTEM = 'http://terminology.hl7.org/CodeSystem/v2-0116'
export const LOCATION_SYSTEMS = {
  ward: 'urn:facility-service:ward',
  room: 'urn:facility-service:room',
  bed: 'urn:facility-service:bed',
} as const

/** The name of the ward of the records without a facility. */
export const NO_FACILITY_NAME = '(no facility)'

const PHYSICAL = {
  ward: { code: 'wa', display: 'Ward' },
  room: { code: 'ro', display: 'Room' },
  bed: { code: 'bd', display: 'Bed' },
} as const

/** HL7 table 0116 (bed status) of each state a bed shows. */
export const TABLE_0116_OF_STATE: Readonly<Record<BedState['state'], { code: string; display: string }>> = {
  occupied: { code: 'O', display: 'Occupied' },
  'on-leave': { code: 'O', display: 'Occupied' },
  free: { code: 'U', display: 'Unoccupied' },
  expected: { code: 'U', display: 'Unoccupied' },
  cleaning: { code: 'H', display: 'Housekeeping' },
  closed: { code: 'C', display: 'Closed' },
  contaminated: { code: 'K', display: 'Contaminated' },
  isolated: { code: 'I', display: 'Isolated' },
}

export type PlaceKind = keyof typeof PHYSICAL

/** A Location with what searches and includes need to know of it. */
export interface Place {
  kind: PlaceKind
  facility: string | null
  resource: Resource
  /** The current encounters of the bed (their numbers): an active stay in it, or expected in it. */
  currentEncounters: string[]
}

const facilityKey = (facility: string | null) => facility ?? ''

export const wardId = (facility: string | null) => fhirId('ward', [facilityKey(facility)])
export const roomId = (facility: string | null, room: string) => fhirId('room', [facilityKey(facility), room])
export const bedId = (facility: string | null, bed: string) => fhirId('bed', [facilityKey(facility), bed])

function place(
  kind: PlaceKind,
  id: string,
  name: string,
  identifier: string,
  partOf?: { reference: string; display: string },
) {
  return {
    resourceType: 'Location',
    id,
    identifier: [{ system: LOCATION_SYSTEMS[kind], value: identifier }],
    status: 'active',
    name,
    mode: 'instance',
    physicalType: { coding: [{ system: PHYSICAL_TYPE_SYSTEM, ...PHYSICAL[kind] }], text: PHYSICAL[kind].display },
    ...(partOf === undefined ? {} : { partOf }),
  } satisfies Resource
}

/** When the bed last changed, as far as the ward keeps it (0 for a listed bed never used). */
function bedUpdated(bed: BedState): number {
  const times = [
    bed.housekeeping?.since,
    bed.expected?.since,
    bed.lastDischarged?.dischargedAt,
    ...bed.active.map((o) => o.occupiedAt),
    ...(bed.onLeave ?? []).map((m) => m.since),
    ...(bed.dischargeExpected ?? []).map((m) => m.since),
  ]
  return Math.max(0, ...times.filter((t): t is number => t !== undefined))
}

/** The ward, its rooms and its beds, in that order (rooms and beds as GET /beds orders them). */
export function wardPlaces(facility: string | null, beds: readonly BedState[]): Place[] {
  const key = facilityKey(facility)
  const wardName = facility ?? NO_FACILITY_NAME
  const ward = { reference: `Location/${wardId(facility)}`, display: wardName }
  const rooms = new Map<string, { updated: number }>()
  const bedPlaces: Place[] = []
  for (const bed of beds) {
    const updated = bedUpdated(bed)
    let partOf = ward
    if (bed.room !== undefined) {
      partOf = { reference: `Location/${roomId(facility, bed.room)}`, display: bed.room }
      rooms.set(bed.room, { updated: Math.max(rooms.get(bed.room)?.updated ?? 0, updated) })
    }
    const resource = {
      ...place('bed', bedId(facility, bed.bed), bed.bed, `${key}/${bed.bed}`, partOf),
      operationalStatus: { system: BED_STATUS_SYSTEM, ...TABLE_0116_OF_STATE[bed.state] },
    }
    bedPlaces.push({
      kind: 'bed',
      facility,
      resource: withMeta(resource, updated),
      currentEncounters: [
        ...new Set([...bed.active.map((o) => o.encounter), ...(bed.expected ? [bed.expected.encounter] : [])]),
      ],
    })
  }
  const roomPlaces = [...rooms].map(
    ([room, { updated }]): Place => ({
      kind: 'room',
      facility,
      resource: withMeta(place('room', roomId(facility, room), room, `${key}/${room}`, ward), updated),
      currentEncounters: [],
    }),
  )
  const wardUpdated = Math.max(
    0,
    ...[...rooms.values()].map((r) => r.updated),
    ...bedPlaces.map((b) => Date.parse(b.resource.meta?.lastUpdated ?? '0')),
  )
  const wardPlace: Place = {
    kind: 'ward',
    facility,
    resource: withMeta(place('ward', wardId(facility), wardName, key), wardUpdated),
    currentEncounters: [],
  }
  return [wardPlace, ...roomPlaces, ...bedPlaces]
}
