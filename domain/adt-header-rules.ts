/**
 * The header fields that decide whether the service may take a message at all, whatever its event:
 * its processing id (MSH-11), its version (MSH-12) and the acknowledgements it asks for (MSH-15,
 * MSH-16). docs/ADT.md, "Processing ids", "Versions", "Acknowledgement modes". Pure.
 */
import type { Hl7Message } from '@medplum/core'
import type { Rejection } from './adt-message.js'

/** The versions whose ADT fields docs/ADT.md documents: 2.3 to 2.8 and their point releases (2.3.1, 2.5.1, 2.8.2). */
const VERSION = /^2\.[3-8](\.\d+)?$/

/** HL7 table 0155, the values of MSH-15 and MSH-16. */
const ACK_CONDITIONS = new Set(['AL', 'NE', 'ER', 'SU'])

function first(message: Hl7Message, field: number): string {
  return message.getSegment('MSH')?.getComponent(field, 1).trim() ?? ''
}

/** MSH-15 or MSH-16 set: the sender asks for enhanced-mode acknowledgements (CA, CE, CR). */
export function enhancedMode(message: Hl7Message): boolean {
  return first(message, 15) !== '' || first(message, 16) !== ''
}

function processingRejection(message: Hl7Message, allowed: readonly string[]): Rejection | null {
  const id = first(message, 11)
  if (id === '') return { field: 'MSH-11', reason: 'MSH-11 (processing id) is empty', code: 101 }
  if (allowed.includes(id)) return null
  return {
    field: 'MSH-11',
    reason: `processing id ${id} (MSH-11) is not applied here; HL7_PROCESSING_IDS allows ${allowed.join(', ')}`,
    code: 202,
  }
}

function versionRejection(message: Hl7Message): Rejection | null {
  const version = first(message, 12)
  if (version === '') return { field: 'MSH-12', reason: 'MSH-12 (version id) is empty', code: 101 }
  if (VERSION.test(version)) return null
  return { field: 'MSH-12', reason: `version ${version} (MSH-12) is not read here: 2.3 to 2.8.x are`, code: 203 }
}

function ackModeRejection(message: Hl7Message): Rejection | null {
  for (const field of [15, 16]) {
    const value = first(message, field)
    if (value !== '' && !ACK_CONDITIONS.has(value))
      return { field: `MSH-${field}`, reason: `MSH-${field} ${value} is not AL, NE, ER or SU`, code: 102 }
  }
  const application = first(message, 16)
  if (application === '' || application === 'NE') return null
  return {
    field: 'MSH-16',
    reason: `application acknowledgements (MSH-16 ${application}) are not sent by this service; send NE or leave it empty: the commit acknowledgement (CA) says the message is applied`,
    code: 207,
  }
}

/** Why the header refuses the message, or null. `processingIds`: HL7_PROCESSING_IDS. */
export function headerRejection(message: Hl7Message, processingIds: readonly string[]): Rejection | null {
  return processingRejection(message, processingIds) ?? versionRejection(message) ?? ackModeRejection(message)
}
