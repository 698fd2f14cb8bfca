import { Hl7Message } from '@medplum/core'
import { ackFor, ackForUnparseable } from './acks.js'

/** Why a frame is refused as a whole, before it is read as a message. */
export type FrameRefusal = 'too-large' | 'unparseable' | 'segments' | 'fields'

export interface FrameLimits {
  maxBytes: number
  maxSegments: number
  maxFields: number
}

function refusalText(reason: FrameRefusal, limits: FrameLimits): string {
  switch (reason) {
    case 'too-large':
      return `the message is larger than ${limits.maxBytes} bytes (HL7_MAX_MESSAGE_BYTES)`
    case 'segments':
      return `the message has more than ${limits.maxSegments} segments (HL7_MAX_SEGMENTS)`
    case 'fields':
      return `the message has more than ${limits.maxFields} fields, repetitions and components (HL7_MAX_FIELDS)`
    default:
      return 'the frame is not an HL7 v2 message (it must start with MSH)'
  }
}

/** The AR of a frame refused as a whole; MSA-2 is the control id its start names, when it names one. */
export function frameRefusal(reason: FrameRefusal, headText: string, limits: FrameLimits): string {
  const text = refusalText(reason, limits)
  const error = { field: '', code: reason === 'unparseable' ? 100 : 207, text }
  const firstSegment = headText.split(/\r|\n/)[0] ?? ''
  if (firstSegment.startsWith('MSH')) {
    try {
      return ackFor(Hl7Message.parse(firstSegment), 'AR', text, error)
    } catch {
      // Not even the MSH reads: answered without a control id below.
    }
  }
  return ackForUnparseable(text, error)
}
