import { Hl7Message, Hl7Segment } from '@medplum/core'

/**
 * Original-mode acknowledgements (MSA-1 AA, AR, AE), built with the library's Hl7Message.buildAck,
 * with MSA-3 saying what happened and, for AR and AE, an ERR segment naming the field: ERR-1 as
 * v2.3/v2.4 receivers read it, ERR-2..8 as v2.5 and later do.
 */
export type AckCode = 'AA' | 'AR' | 'AE'

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

function errSegment(error: AckError, severity: 'E' | 'W'): Hl7Segment {
  const [segment = '', field = ''] = error.field.split('-')
  const location = segment === '' ? '' : `${segment}^1${field === '' ? '' : `^${field}`}`
  const codeText = CODE_TEXT[error.code] ?? 'Error'
  const text = escapeText(error.text)
  // ERR-1 (v2.3/v2.4): location^code&text in one field; ERR-2 location, ERR-3 code, ERR-4 severity, ERR-8 text.
  return Hl7Segment.parse(
    `ERR|${location}${location === '' ? '^^^' : '^'}${error.code}&${codeText}|${location}|${error.code}^${codeText}^HL70357|${severity}||||${text}`,
  )
}

/** The ACK of a parsed message. */
export function ackFor(message: Hl7Message, code: AckCode, text: string, error?: AckError): string {
  const ack = message.buildAck({
    ackCode: code,
    ...(error === undefined ? {} : { errSegment: errSegment(error, code === 'AA' ? 'W' : 'E') }),
  })
  ack.getSegment('MSA')?.setField(3, escapeText(text))
  return ack.toString()
}

/** The AR for a frame that could not be parsed (no control id to answer, so MSA-2 is empty). */
export function ackForUnparseable(text: string, error: AckError): string {
  const stamp = new Date()
    .toISOString()
    .replace(/[-:T]/g, '')
    .replace(/\.\d+Z$/, '')
  const base = Hl7Message.parse(`MSH|^~\\&|facility-service|WARD|||${stamp}||ACK|${Date.now()}|P|2.5.1\rMSA|AR|`)
  base.setSegment(2, errSegment(error, 'E'))
  base.getSegment('MSA')?.setField(3, escapeText(text))
  return base.toString()
}
