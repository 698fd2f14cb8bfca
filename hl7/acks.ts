import type { Hl7Field, Hl7Message } from '@medplum/core'
import { enhancedMode } from '../domain/adt-header-rules.js'
import { PROCESSING_IDS } from '../lib/hl7-header-settings.js'

/**
 * Acknowledgements (MSA-1 AA, AR, AE; CA, CR, CE in enhanced mode), the text the library's
 * Hl7Message.buildAck would make (MSH with sender and receiver swapped, MSA-2 the control id, the
 * message type mirrored)
 * with MSA-3 saying what happened and, for AR and AE, an ERR segment naming the field: ERR-1 as
 * v2.3/v2.4 receivers read it, ERR-2..8 as v2.5 and later do. Written as text directly: building
 * the library's objects, setting MSA-3 and printing them again cost about 0.1 ms of every ADT
 * message (test/hl7/acks.test.ts checks the text is the library's, but for MSH-7: hl7Now).
 */
export type AckCode = 'AA' | 'AR' | 'AE'

/**
 * A message that asks for enhanced mode (MSH-15 or MSH-16 set) gets the commit acknowledgement:
 * CA when it is committed (the moment an AA would be sent), CR and CE in place of AR and AE.
 */
const ENHANCED: Record<AckCode, string> = { AA: 'CA', AR: 'CR', AE: 'CE' }

export interface AckError {
  /** Where: MSH-10, PV1-3 ... (empty: the message as a whole). */
  field: string
  /** HL7 table 0357 (101 required field missing, 207 application internal error ...). */
  code: number
  text: string
}

const CODE_TEXT: Record<number, string> = {
  0: 'Message accepted',
  100: 'Segment sequence error',
  101: 'Required field missing',
  102: 'Data type error',
  200: 'Unsupported message type',
  202: 'Unsupported processing id',
  203: 'Unsupported version id',
  205: 'Duplicate key identifier',
  206: 'Application record locked',
  207: 'Application internal error',
}

/** A value with HL7's separators escaped, for text we put in a field. */
export function escapeText(text: string): string {
  return text.replace(
    /[\\|^&~\r\n]/g,
    (c) => ({ '\\': '\\E\\', '|': '\\F\\', '^': '\\S\\', '&': '\\T\\', '~': '\\R\\' })[c] ?? ' ',
  )
}

function errSegment(error: AckError, severity: 'E' | 'W'): string {
  // PV1-3 is PV1^1^3; a component, PV1-3.3, is PV1^1^3^1^3 (ERL: segment, its sequence, field, repetition, component).
  const [segment = '', position = ''] = error.field.split('-')
  const [field = '', part] = position.split('.')
  const location =
    segment === '' ? '' : `${segment}^1${field === '' ? '' : `^${field}`}${part === undefined ? '' : `^1^${part}`}`
  const codeText = CODE_TEXT[error.code] ?? 'Error'
  const text = escapeText(error.text)
  // ERR-1 (v2.3/v2.4): location^code&text in one field; ERR-2 location, ERR-3 code, ERR-4 severity, ERR-8 text.
  return `ERR|${location}${location === '' ? '^^^' : '^'}${error.code}&${codeText}|${location}|${error.code}^${codeText}^HL70357|${severity}||||${text}`
}

/**
 * MSH-7 of an ACK: the clock in UTC as YYYYMMDDHHMMSS.SSS+0000. The milliseconds are zero-padded
 * (the library's formatHl7DateTime writes 42 ms as `.42`, which reads as 420 ms) and the offset
 * is written, so a receiver in any zone reads the same instant.
 */
export function hl7Now(now: Date): string {
  const pad = (n: number, width = 2) => String(n).padStart(width, '0')
  return `${now.getUTCFullYear()}${pad(now.getUTCMonth() + 1)}${pad(now.getUTCDate())}${pad(now.getUTCHours())}${pad(now.getUTCMinutes())}${pad(now.getUTCSeconds())}.${pad(now.getUTCMilliseconds(), 3)}+0000`
}

/** Processing modes (HL7 table 0207), or none. */
const PROCESSING_MODE = /^[ARIT]?$/

/**
 * MSH-11 of an ACK: the message's own processing id and mode, so a test system reads its answers
 * on its test channel; P when the message has none that HL7 defines.
 */
function processingIdOf(field: Hl7Field | undefined, componentSeparator: string): string {
  const id = field?.getComponent(1) ?? ''
  const mode = field?.getComponent(2) ?? ''
  if (!(PROCESSING_IDS as readonly string[]).includes(id) || !PROCESSING_MODE.test(mode)) return 'P'
  return mode === '' ? id : `${id}${componentSeparator}${mode}`
}

/** The ACK of a parsed message. */
export function ackFor(message: Hl7Message, code: AckCode, text: string, error?: AckError): string {
  const { context } = message
  const msh = message.getSegment('MSH')
  const field = (n: number) => msh?.getField(n)?.toString()
  // The message type mirrored as buildAck does: ACK, ACK^<trigger>, or ACK^<trigger>^ACK.
  const type = msh?.getField(9)
  const trigger = type?.getComponent(2)
  const structure = type?.getComponent(3)
  const ackType = trigger ? (structure ? `ACK^${trigger}^ACK` : `ACK^${trigger}`) : 'ACK'
  const now = new Date()
  const separator = context.fieldSeparator
  const header = [
    'MSH',
    context.getMsh2(),
    field(5) ?? '',
    field(6) ?? '',
    field(3) ?? '',
    field(4) ?? '',
    hl7Now(now),
    '',
    ackType,
    now.getTime().toString(),
    processingIdOf(msh?.getField(11), context.componentSeparator),
    field(12) ?? '2.5.1',
    // The set the ACK is written in (hl7/charset.ts encodeAck): the message's own.
    ...(field(18) ? ['', '', '', '', '', field(18)] : []),
  ].join(separator)
  const msa = ['MSA', enhancedMode(message) ? ENHANCED[code] : code, field(10) ?? '', escapeText(text)].join(separator)
  const err = error === undefined ? '' : `\r${errSegment(error, code === 'AA' ? 'W' : 'E')}`
  return `${header}\r${msa}${err}`
}

/** The AR for a frame that could not be parsed (no control id to answer, so MSA-2 is empty). */
export function ackForUnparseable(text: string, error: AckError): string {
  const stamp = hl7Now(new Date())
  return `MSH|^~\\&|facility-service|WARD|||${stamp}||ACK|${Date.now()}|P|2.5.1\rMSA|AR||${escapeText(text)}\r${errSegment(error, 'E')}`
}
