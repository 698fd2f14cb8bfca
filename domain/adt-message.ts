/**
 * What an HL7 v2 ADT message says, read from the library's parsed message (@medplum/core's
 * Hl7Message): who sent it, which event, and the fields the ward needs (docs/ADT.md has the table).
 * A message that can never be applied is a rejection naming the field. Pure: no clock, no I/O.
 */
import type { Hl7Message, Hl7Segment } from '@medplum/core'
import { WardOccupantCreate } from '../schemas/ward-occupants.js'
import { BED_EVENTS } from './adt-bed-events.js'
import { headerRejection } from './adt-header-rules.js'
import { isPatientEvent, type PatientEventFields, readPatientEvent } from './adt-patient-message.js'
import { TABLE_0116 } from './bed-states.js'
import { parseHl7Time } from './hl7-time.js'

/** The events the ward applies or parks; every other ADT trigger is acknowledged and ignored. */
export const WARD_EVENTS = [
  'A01',
  'A02',
  'A03',
  'A08',
  'A11',
  'A12',
  'A13',
  // Who lies where, which patient, which visit (domain/adt-patient-events.ts).
  'A06',
  'A07',
  'A17',
  'A40',
  'A47',
  'A50',
  'A54',
  'A55',
  // Merges and moves it cannot follow: parked for an admin (UNFOLLOWED in adt-patient-message.ts).
  'A18',
  'A23',
  'A30',
  'A34',
  'A36',
  'A39',
  'A42',
  'A43',
  'A44',
  'A45',
  'A46',
  // Pending moves, leaves of absence, bed status (domain/adt-bed-events.ts).
  ...BED_EVENTS,
] as const
export type WardEventCode = (typeof WARD_EVENTS)[number]

export interface AdtSettings {
  /** Facility when PV1-3.4 is empty (HL7_DEFAULT_FACILITY); null: none. */
  defaultFacility: string | null
  /** The PID-3 identifier type (CX-5) that names the patient (HL7_PATIENT_ID_TYPE). */
  patientIdType: string
  /** Zone of timestamps without an offset (HL7_TIMEZONE). */
  timeZone: string
  /** A location change in an A08 is a transfer (HL7_A08_TRANSFERS). */
  transferOnA08: boolean
  /** The MSH-11 processing ids applied (HL7_PROCESSING_IDS); absent: production (P) only. */
  processingIds?: readonly string[]
}

export interface MessageHeader {
  sendingApplication: string
  sendingFacility: string
  controlId: string
  /** MSH-9.1 and MSH-9.2 (or EVN-1 when MSH-9.2 is empty, as some v2.3 senders do). */
  messageType: string
  trigger: string
  /** MSH-7, read in the settings' zone; null when absent or unreadable. */
  sentAt: number | null
}

export interface Location {
  facility: string | null
  room: string | null
  bed: string
}

export interface WardMessage extends PatientEventFields {
  event: WardEventCode
  /** PV1-19; empty on an A40/A47 without PV1 (a merge names patients, not a visit). */
  encounter: string
  /** Absent on the events that need none (A03, A08 without a move, the cancellations). */
  patient: string | null
  location: Location | null
  /** PV1-3.4, else HL7_DEFAULT_FACILITY: the facility the message names even without a bed. */
  facility: string | null
  provider: string | null
  /** When the event happened: EVN-6, else EVN-2, else MSH-7. */
  eventAt: number
  /** When the patient left: PV1-45, else the event time. */
  dischargedAt: number
  /** A20: NPU-2, the bed status (HL7 table 0116). */
  bedStatus?: string
}

/** Why a message can never be applied; `field` is where (MSH-9, PV1-3 ...), for the ERR segment. */
export interface Rejection {
  field: string
  reason: string
  /** HL7 table 0357: 100 segment sequence, 101 required field missing, 102 data type, 103 table value not found, 200 unsupported message type, 202 unsupported processing id, 203 unsupported version id, 207 application error. */
  code: 100 | 101 | 102 | 103 | 200 | 202 | 203 | 207
}

export type AdtReading =
  | { kind: 'ward'; header: MessageHeader; message: WardMessage }
  | { kind: 'ignored'; header: MessageHeader }
  | { kind: 'rejected'; header: MessageHeader | null; rejection: Rejection }

const ESCAPES: Record<string, string> = { F: '|', S: '^', T: '&', R: '~', E: '\\' }

/**
 * A field value with HL7's escape sequences resolved (\F\ \S\ \T\ \R\ \E\, \Xhh..\ in ASCII);
 * formatting sequences (\H\, \N\, \.br\ ...) carry no meaning for an identifier and are dropped.
 * The parser hands values over escaped (it splits on the separators only).
 */
export function unescapeValue(value: string, escapeChar = '\\'): string {
  if (!value.includes(escapeChar)) return value
  const e = escapeChar.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  return value.replace(new RegExp(`${e}([^${e}]*)${e}`, 'g'), (_all, code: string) => {
    const named = ESCAPES[code]
    if (named !== undefined) return named
    if (/^X([0-9A-Fa-f]{2})+$/.test(code))
      return (code.slice(1).match(/../g) ?? []).map((hex) => String.fromCharCode(Number.parseInt(hex, 16))).join('')
    return ''
  })
}

export function component(segment: Hl7Segment | undefined, field: number, part: number, repetition = 0): string {
  if (!segment) return ''
  return unescapeValue(segment.getComponent(field, part, undefined, repetition), segment.context.escapeCharacter).trim()
}

/** The sender, control id and message type, or why they cannot be read. */
export function readHeader(message: Hl7Message, timeZone: string): MessageHeader | Rejection {
  const msh = message.getSegment('MSH')
  if (!msh || message.getSegment(0) !== msh)
    return { field: 'MSH', reason: 'the message does not start with MSH', code: 100 }
  const controlId = component(msh, 10, 1)
  if (controlId === '') return { field: 'MSH-10', reason: 'MSH-10 (message control id) is empty', code: 101 }
  const type = component(msh, 9, 1)
  const trigger = component(msh, 9, 2) || component(message.getSegment('EVN'), 1, 1)
  const sent = component(msh, 7, 1)
  return {
    sendingApplication: component(msh, 3, 1),
    sendingFacility: component(msh, 4, 1),
    controlId,
    messageType: type,
    trigger,
    sentAt: sent === '' ? null : parseHl7Time(sent, timeZone),
  }
}

/** The PID-3 (or MRG-1: `field` 1) repetition whose identifier type (CX-5) is `type`, else the first one. */
export function patientId(pid: Hl7Segment | undefined, type: string, field = 3): string {
  if (!pid) return ''
  const repetitions = pid.getField(field).components.length
  for (let r = 0; r < repetitions; r++) {
    if (component(pid, field, 5, r) === type && component(pid, field, 1, r) !== '') return component(pid, field, 1, r)
  }
  return component(pid, field, 1, 0)
}

/** The event time (EVN-6, else EVN-2, else MSH-7) and PV1-45, or why they cannot be read. */
export function eventTimes(
  message: Hl7Message,
  header: MessageHeader,
  zone: string,
  pv1: Hl7Segment | undefined,
): { eventAt: number; dischargedAt: number } | Rejection {
  const evn = message.getSegment('EVN')
  const recorded = timeField(evn, 'EVN', 2, zone)
  const occurred = timeField(evn, 'EVN', 6, zone)
  const left = timeField(pv1, 'PV1', 45, zone)
  for (const t of [recorded, occurred, left]) if (isRejection(t)) return t
  const eventAt = (occurred as number | null) ?? (recorded as number | null) ?? header.sentAt
  if (eventAt === null)
    return { field: 'EVN-2', reason: 'no event time: EVN-6, EVN-2 and MSH-7 are all empty', code: 101 }
  return { eventAt, dischargedAt: (left as number | null) ?? eventAt }
}

/** A timestamp field: its time, null when empty, a rejection when it is not a timestamp. */
export function timeField(
  segment: Hl7Segment | undefined,
  name: string,
  field: number,
  zone: string,
): number | null | Rejection {
  const text = component(segment, field, 1)
  if (text === '') return null
  const at = parseHl7Time(text, zone)
  return at === null ? { field: `${name}-${field}`, reason: `${name}-${field} is not an HL7 timestamp`, code: 102 } : at
}

export const isRejection = (value: unknown): value is Rejection =>
  typeof value === 'object' && value !== null && 'reason' in value

type OccupantText = 'encounter' | 'bed' | 'room' | 'facility' | 'occupiedBy' | 'provider'

/**
 * The first value longer than the API takes for its ward-occupant field (schemas/ward-occupants.ts,
 * counted in characters as the API counts): the same limit whichever way a record comes in.
 */
function overLength(values: [field: string, name: OccupantText, value: string | null][]): Rejection | null {
  for (const [field, name, value] of values) {
    const max = WardOccupantCreate.properties[name].maxLength ?? Number.POSITIVE_INFINITY
    if (value !== null && value.length > max && [...value].length > max)
      return { field, reason: `${field} (${name}) is longer than ${max} characters`, code: 102 }
  }
  return null
}

/** Events that place the patient somewhere (or expect them there), so PV1-3.3 (bed) must be there. */
const PLACING: ReadonlySet<WardEventCode> = new Set(['A01', 'A02', 'A14', 'A15'])

/** When the event happened: EVN-6, else EVN-2, else MSH-7; or why it cannot be read. */
function eventTime(message: Hl7Message, header: MessageHeader, zone: string): number | Rejection {
  const times = eventTimes(message, header, zone, undefined)
  return isRejection(times) ? times : times.eventAt
}

/** A PL field (bed location): point of care, room, bed, facility; null without a bed. */
function place(segment: Hl7Segment | undefined, field: number, settings: AdtSettings): Location | null {
  const bed = component(segment, field, 3)
  if (bed === '') return null
  return {
    facility: component(segment, field, 4) || settings.defaultFacility,
    room: component(segment, field, 2) || null,
    bed,
  }
}

/** A20: the bed (NPU-1) and its status (NPU-2); no patient, no encounter. */
function readBedStatus(message: Hl7Message, header: MessageHeader, settings: AdtSettings): WardMessage | Rejection {
  const npu = message.getSegment('NPU')
  if (!npu) return { field: 'NPU', reason: 'an A20 needs an NPU segment', code: 100 }
  const location = place(npu, 1, settings)
  if (!location) return { field: 'NPU-1', reason: 'NPU-1.3 (bed) is empty; an A20 needs the bed', code: 101 }
  const tooLong = overLength([
    ['NPU-1.3', 'bed', location.bed],
    ['NPU-1.2', 'room', location.room],
    ['NPU-1.4', 'facility', component(npu, 1, 4) || null],
  ])
  if (tooLong !== null) return tooLong
  const status = component(npu, 2, 1)
  if (!(status in TABLE_0116))
    return {
      field: 'NPU-2',
      reason: `NPU-2 (bed status) ${status || '(empty)'} is not one of HL7 table 0116's C, H, K, I, O, U`,
      code: status === '' ? 101 : 103,
    }
  const eventAt = eventTime(message, header, settings.timeZone)
  if (isRejection(eventAt)) return eventAt
  const { facility } = location
  return {
    event: 'A20',
    encounter: '',
    patient: null,
    location,
    facility,
    provider: null,
    eventAt,
    dischargedAt: eventAt,
    bedStatus: status,
  }
}

function readWardMessage(message: Hl7Message, header: MessageHeader, settings: AdtSettings): WardMessage | Rejection {
  const event = header.trigger as WardEventCode
  if (isPatientEvent(event)) return readPatientEvent(message, header, settings, event)
  if (event === 'A20') return readBedStatus(message, header, settings)
  const pv1 = message.getSegment('PV1')
  if (!pv1) return { field: 'PV1', reason: `an ${event} needs a PV1 segment`, code: 100 }
  const encounter = component(pv1, 19, 1)
  if (encounter === '') return { field: 'PV1-19', reason: 'PV1-19 (visit number, the encounter) is empty', code: 101 }
  // A15: the bed the patient is to go to is PV2-1 (prior pending location) when sent, else PV1-3.
  const pending = event === 'A15' ? place(message.getSegment('PV2'), 1, settings) : null
  const bed = pending?.bed ?? component(pv1, 3, 3)
  if (PLACING.has(event) && bed === '')
    return {
      field: 'PV1-3',
      reason: `PV1-3.3 (bed) is empty; an ${event} needs the bed it places the patient in`,
      code: 101,
    }
  const facility = component(pv1, 3, 4) || settings.defaultFacility
  const patient = patientId(message.getSegment('PID'), settings.patientIdType)
  // A transfer keeps the patient of the stay it continues when PID-3 is empty; an admission cannot.
  if (event === 'A01' && patient === '')
    return { field: 'PID-3', reason: `PID-3 (patient identifier) is empty; an ${event} needs the patient`, code: 101 }
  const times = eventTimes(message, header, settings.timeZone, pv1)
  if (isRejection(times)) return times
  const room = component(pv1, 3, 2) || null
  const provider = component(pv1, 7, 1) || null
  const tooLong = overLength([
    ['PV1-19', 'encounter', encounter],
    [pending ? 'PV2-1.3' : 'PV1-3.3', 'bed', bed],
    [pending ? 'PV2-1.2' : 'PV1-3.2', 'room', pending ? pending.room : room],
    [pending ? 'PV2-1.4' : 'PV1-3.4', 'facility', pending ? pending.facility : component(pv1, 3, 4) || null],
    ['PID-3', 'occupiedBy', patient || null],
    ['PV1-7', 'provider', provider],
  ])
  if (tooLong !== null) return tooLong
  return {
    event,
    encounter,
    patient: patient === '' ? null : patient,
    location: pending ?? (bed === '' ? null : { facility, room, bed }),
    facility,
    provider,
    ...times,
  }
}

/** Reads one parsed message: a ward event, an ADT event the ward ignores, or a rejection. */
export function readAdt(message: Hl7Message, settings: AdtSettings): AdtReading {
  const header = readHeader(message, settings.timeZone)
  if (isRejection(header)) return { kind: 'rejected', header: null, rejection: header }
  const refused = headerRejection(message, settings.processingIds ?? ['P'])
  if (refused !== null) return { kind: 'rejected', header, rejection: refused }
  if (header.messageType !== 'ADT')
    return {
      kind: 'rejected',
      header,
      rejection: { field: 'MSH-9', reason: `message type ${header.messageType || '(empty)'} is not ADT`, code: 200 },
    }
  if (header.trigger === '')
    return {
      kind: 'rejected',
      header,
      rejection: { field: 'MSH-9', reason: 'MSH-9.2 (trigger event) is empty', code: 101 },
    }
  if (!(WARD_EVENTS as readonly string[]).includes(header.trigger)) return { kind: 'ignored', header }
  const read = readWardMessage(message, header, settings)
  if (isRejection(read)) return { kind: 'rejected', header, rejection: read }
  return { kind: 'ward', header, message: read }
}
