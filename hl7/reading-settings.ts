import type { AdtSettings } from '../domain/adt-message.js'

/**
 * The settings that decide what a message's text says (docs/ADT.md, "Retry"): the facility when
 * PV1-3.4 is empty, which PID-3 repetition is the patient, the zone of its times. A parked message
 * keeps the ones it was read with at receipt, so a retry applies the message it was parked as: to
 * the same facility, for the same patient, at the same times, whatever the settings are today.
 * HL7_A08_TRANSFERS is not among them: it is the ward's rule for an event, as BED_POLICY is, and a
 * retry follows today's (it cannot move the message to another facility or patient).
 */
type ReadingSettings = Pick<AdtSettings, 'defaultFacility' | 'patientIdType' | 'timeZone'>

/** The reading settings as kept with a parked message. */
export function readingSettingsText(settings: AdtSettings): string {
  const kept: ReadingSettings = {
    defaultFacility: settings.defaultFacility,
    patientIdType: settings.patientIdType,
    timeZone: settings.timeZone,
  }
  return JSON.stringify(kept)
}

/**
 * The settings a retry reads a parked message with: those kept at its receipt; today's for a
 * message parked before they were kept (migration 15), whose retry is still held to the facility
 * it was filed under (db/repositories/hl7-messages.ts).
 */
export function settingsAtReceipt(kept: string | null, today: AdtSettings): AdtSettings {
  if (kept === null) return today
  const read = JSON.parse(kept) as Partial<ReadingSettings>
  const text = (value: unknown): value is string => typeof value === 'string'
  if (
    !(read.defaultFacility === null || text(read.defaultFacility)) ||
    !text(read.patientIdType) ||
    !text(read.timeZone)
  )
    throw new Error('hl7_messages.read_with is not the reading settings this build writes')
  return {
    ...today,
    defaultFacility: read.defaultFacility,
    patientIdType: read.patientIdType,
    timeZone: read.timeZone,
  }
}
