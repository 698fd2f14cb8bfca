/**
 * What the ADT events that change who lies where, which patient or which visit say (A06, A07, A17,
 * A40, A47, A50, A54, A55): read from the parsed message beside the admission events of
 * adt-message.ts, whose field helpers they share. Pure: no clock, no I/O.
 */
import type { Hl7Message, Hl7Segment } from '@medplum/core'
import {
  type AdtSettings,
  component,
  eventTimes,
  isRejection,
  type Location,
  type MessageHeader,
  patientId,
  type Rejection,
  type WardMessage,
} from './adt-message.js'

/**
 * Merges and moves the ward cannot follow (it keeps no account numbers, no person links, and one
 * patient a stay): each may change who lies in a bed or the patient or visit of a stay, so it is
 * parked, an admin told, never ignored. Each says what it may have changed.
 */
export const UNFOLLOWED = {
  A18: 'merge patient information (MRG-1 into PID-3): the stays of MRG-1 may be of another patient now',
  A23: 'delete a patient record: a stay of the visit may have to be removed',
  A30: 'merge person information (MRG-1 into PID-3): the stays of MRG-1 may be of another patient now',
  A34: 'merge patient information, patient id only: the stays of MRG-1 may be of another patient now',
  A36: 'merge patient information, patient id and account: the stays of MRG-1 may be of another patient now',
  A39: 'merge person, patient id: the stays of MRG-1 may be of another patient now',
  A42: 'merge visit (MRG-5 into PV1-19): the stays of visit MRG-5 may belong to another visit now',
  A43: "move patient information: a visit of MRG-1 may be PID-3's now",
  A44: "move account information: the visits of an account (the ward keeps none) may be PID-3's now",
  A45: "move visit information: visit MRG-5 may be PID-3's now",
  A46: 'change patient id (PID-3 replaces MRG-1): the stays of MRG-1 may carry an old id now',
} as const

export const PATIENT_EVENTS = [
  'A06',
  'A07',
  'A17',
  'A40',
  'A47',
  'A50',
  'A54',
  'A55',
  ...(Object.keys(UNFOLLOWED) as (keyof typeof UNFOLLOWED)[]),
] as const
export type PatientEventCode = (typeof PATIENT_EVENTS)[number]
export const isUnfollowed = (event: string): event is keyof typeof UNFOLLOWED => Object.hasOwn(UNFOLLOWED, event)

export const isPatientEvent = (event: string): event is PatientEventCode =>
  (PATIENT_EVENTS as readonly string[]).includes(event)

/** The longest identifier a ward occupant holds (schemas/ward-occupants.ts: Text(200)). */
export const FIELD_LIMIT = 200

/** One patient of an A17 swap: the second PID/PV1 group (the first is the message's own fields). */
export interface SwapGroup {
  encounter: string
  patient: string | null
  location: Location
  provider: string | null
}

/** What these events add to a ward message; absent on the others. */
export interface PatientEventFields {
  /** A17: the other patient's group. */
  swapWith?: SwapGroup
  /** A40, A47: each PID-3 (the identifier that stays) with the MRG-1 of its group (the one that goes). */
  merges?: { from: string; to: string }[]
  /** A50: MRG-5, the visit number that PV1-19 replaces. */
  previousEncounter?: string
}

const required = (field: string, what: string, event: string): Rejection => ({
  field,
  reason: `${field} (${what}) is empty; an ${event} needs it`,
  code: 101,
})

/** A value the record cannot hold (it would be cut or refused by the API): the whole message is refused. */
function tooLong(field: string, value: string | null): Rejection | null {
  if (value === null || value.length <= FIELD_LIMIT) return null
  return { field, reason: `${field} is longer than ${FIELD_LIMIT} characters, the ward record's limit`, code: 207 }
}

function locationOf(pv1: Hl7Segment, settings: AdtSettings): Location | null {
  const bed = component(pv1, 3, 3)
  if (bed === '') return null
  return { facility: component(pv1, 3, 4) || settings.defaultFacility, room: component(pv1, 3, 2) || null, bed }
}

/** A17's second group: the second PID and the second PV1. */
function swapGroup(message: Hl7Message, settings: AdtSettings): SwapGroup | Rejection {
  const pid = message.getAllSegments('PID')[1]
  const pv1 = message.getAllSegments('PV1')[1]
  if (!pid || !pv1) return { field: 'PV1', reason: 'an A17 needs two PID/PV1 groups, one for each patient', code: 100 }
  const encounter = component(pv1, 19, 1)
  if (encounter === '') return required('PV1-19', 'visit number of the second patient', 'A17')
  const location = locationOf(pv1, settings)
  if (location === null) return required('PV1-3', 'bed of the second patient', 'A17')
  const patient = patientId(pid, settings.patientIdType) || null
  return { encounter, patient, location, provider: component(pv1, 7, 1) || null }
}

/** A40/A47: each MRG with the PID before it (the message may repeat the PID/MRG group). */
function mergesOf(message: Hl7Message, settings: AdtSettings, event: string): WardMessage['merges'] | Rejection {
  const merges: { from: string; to: string }[] = []
  let pid: Hl7Segment | undefined
  for (const segment of message.segments) {
    if (segment.name === 'PID') pid = segment
    if (segment.name !== 'MRG') continue
    const to = patientId(pid, settings.patientIdType)
    const from = patientId(segment, settings.patientIdType, 1)
    if (to === '') return required('PID-3', 'the identifier that stays', event)
    if (from === '') return required('MRG-1', 'the identifier that is merged away', event)
    const long = tooLong('PID-3', to)
    if (long) return long
    merges.push({ from, to })
  }
  if (merges.length === 0) return { field: 'MRG', reason: `an ${event} needs an MRG segment`, code: 100 }
  return merges
}

/** One of PATIENT_EVENTS, read: the fields each needs (docs/ADT.md, "Conformance"), or why it cannot be applied. */
export function readPatientEvent(
  message: Hl7Message,
  header: MessageHeader,
  settings: AdtSettings,
  event: PatientEventCode,
): WardMessage | Rejection {
  // Read only for the log: which visit and facility, and when; they are parked whatever they say.
  const merge = event === 'A40' || event === 'A47' || isUnfollowed(event)
  const pv1 = message.getSegment('PV1')
  if (!pv1 && !merge) return { field: 'PV1', reason: `an ${event} needs a PV1 segment`, code: 100 }
  const encounter = component(pv1, 19, 1)
  if (encounter === '' && !merge) return required('PV1-19', 'visit number, the encounter', event)
  // A doctor change never moves anyone: its PV1-3 files it under no other facility than its stay's.
  const doctorOnly = event === 'A54' || event === 'A55'
  const location = pv1 && !doctorOnly ? locationOf(pv1, settings) : null
  const patient = patientId(message.getSegment('PID'), settings.patientIdType)
  const provider = component(pv1, 7, 1) || null
  // An A06 with a bed admits: it needs the patient, as an A01 does.
  if (event === 'A06' && location !== null && patient === '') return required('PID-3', 'patient identifier', event)
  if (event === 'A17' && location === null) return required('PV1-3', 'bed of the first patient', event)
  if (doctorOnly && provider === null) return required('PV1-7', 'attending doctor', event)
  for (const [field, value] of [
    ['PV1-19', encounter],
    ['PID-3', patient],
    ['PV1-7', provider],
  ] as const) {
    const long = tooLong(field, value)
    if (long) return long
  }
  const times = eventTimes(message, header, settings.timeZone, pv1)
  if (isRejection(times)) return times
  const read: WardMessage = {
    event,
    encounter,
    patient: patient === '' ? null : patient,
    location,
    facility: (pv1 && component(pv1, 3, 4)) || settings.defaultFacility,
    provider,
    ...times,
  }
  if (event === 'A17') {
    const other = swapGroup(message, settings)
    if (isRejection(other)) return other
    if (other.encounter === encounter)
      return { field: 'PV1-19', reason: 'the two groups of the A17 name the same visit', code: 207 }
    const long = tooLong('PID-3', other.patient) ?? tooLong('PV1-7', other.provider)
    if (long) return long
    read.swapWith = other
  }
  if (isUnfollowed(event)) return read
  if (merge) {
    const merges = mergesOf(message, settings, event)
    if (isRejection(merges)) return merges
    read.merges = merges
  }
  if (event === 'A50') {
    const previous = component(message.getSegment('MRG'), 5, 1)
    if (previous === '') return required('MRG-5', 'the visit number being replaced', event)
    if (previous === encounter)
      return { field: 'MRG-5', reason: 'MRG-5 and PV1-19 name the same visit number', code: 207 }
    read.previousEncounter = previous
  }
  return read
}
