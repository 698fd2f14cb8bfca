/**
 * Where a frame's bytes become text: in the character set its MSH-18 declares (HL7_CHARSET when
 * empty), never with a replacement character. The listener calls decodeFrame on each frame's bytes
 * (between the MLLP start and end blocks) and answers in that set with encodeAck; a frame it
 * cannot read in that set gets the AR of charsetRefusal. docs/ADT.md, "Character sets".
 */
import { Hl7Message } from '@medplum/core'
import iconv from 'iconv-lite'
import type { AdtReading } from '../domain/adt-message.js'
import { CHARSET_NAMES, type Charset, charsetNamed } from '../lib/hl7-charset.js'
import { ackFor, ackForUnparseable } from './acks.js'

export interface CharsetRejection {
  field: 'MSH-18'
  reason: string
  code: 207
}

export type DecodedFrame =
  /** `charset`: the HL7 name of the set it was read in, for encodeAck. */
  | { text: string; charset: string }
  /** `headText`: the first segment, each byte outside ASCII as `?`, for the AR's MSH. */
  | { rejection: CharsetRejection; headText: string }

const CR = 0x0d
const LF = 0x0a
const QUESTION_MARK = 0x3f
/** C1 control codes: no character in ISO 8859; in a "Latin-1" message, most likely windows-1252 text. */
const C1 = /[\u0080-\u009f]/

/** The first segment's bytes, and MSH-18 read from them (ASCII by the standard); null: no MSH. */
function declaredCharset(bytes: Buffer): { head: Buffer; msh18: Buffer } | null {
  if (bytes.length < 4 || bytes.toString('latin1', 0, 3) !== 'MSH') return null
  let end = bytes.findIndex((b) => b === CR || b === LF)
  if (end === -1) end = bytes.length
  const head = bytes.subarray(0, end)
  const separator = head[3] as number
  // MSH-1 is the separator itself: the first piece after it is MSH-2.
  let field = 2
  let start = 4
  for (let i = 4; i <= head.length; i++) {
    if (i < head.length && head[i] !== separator) continue
    if (field === 18) return { head, msh18: head.subarray(start, i) }
    field++
    start = i + 1
  }
  return { head, msh18: Buffer.alloc(0) }
}

function asciiSafe(bytes: Buffer): string {
  return Buffer.from(bytes.map((b) => (b < 0x80 ? b : QUESTION_MARK))).toString('latin1')
}

function reject(reason: string, head: Buffer): DecodedFrame {
  return { rejection: { field: 'MSH-18', reason, code: 207 }, headText: asciiSafe(head) }
}

/** The text, or why the bytes are not text of `charset`. */
function decode(bytes: Buffer, charset: Charset): { text: string } | { invalid: string } {
  if (charset.encoding === 'utf-8') {
    try {
      return { text: new TextDecoder('utf-8', { fatal: true }).decode(bytes) }
    } catch {
      return { invalid: 'it holds bytes that are not valid UTF-8' }
    }
  }
  if (charset.encoding === 'ascii') {
    const at = bytes.findIndex((b) => b >= 0x80)
    return at === -1
      ? { text: bytes.toString('latin1') }
      : { invalid: `byte 0x${bytes[at]?.toString(16)} at ${at} is not ASCII` }
  }
  const text = iconv.decode(bytes, charset.encoding)
  if (text.includes('\uFFFD')) return { invalid: 'it holds a byte that is no character of that set' }
  if (C1.test(text)) return { invalid: 'it holds bytes 0x80 to 0x9F, control codes in ISO 8859 (windows-1252 text?)' }
  return { text }
}

/**
 * A frame's bytes as text, read in the set MSH-18 names (`defaultCharset`, HL7_CHARSET, when it
 * is empty), or the rejection naming MSH-18: a set the service does not read, or bytes that are
 * not text of the declared set. Pure.
 */
export function decodeFrame(bytes: Buffer, defaultCharset: string): DecodedFrame {
  const declared = declaredCharset(bytes)
  const head = declared?.head ?? bytes.subarray(0, 0)
  const msh18 = declared?.msh18 ?? Buffer.alloc(0)
  if (msh18.some((b) => b >= 0x80)) return reject('MSH-18 (character set) is not ASCII', head)
  const name = msh18.toString('latin1').trim()
  // The repetition separator (MSH-2's second character): more than one set is ISO 2022 code switching.
  if (name !== '' && name.includes(String.fromCharCode(head[5] ?? 0x7e)))
    return reject('MSH-18 names more than one character set; switching sets within a message is not read', head)
  const charset = charsetNamed(name === '' ? defaultCharset : name)
  if (charset === null)
    return reject(`character set ${name} (MSH-18) is not one this service reads (${CHARSET_NAMES})`, head)
  const decoded = decode(bytes, charset)
  if ('invalid' in decoded) {
    const declared = name === '' ? '(HL7_CHARSET; MSH-18 is empty)' : 'as MSH-18 declares'
    return reject(`the message is not ${charset.hl7} text ${declared}: ${decoded.invalid}`, head)
  }
  return { text: decoded.text, charset: charset.hl7 }
}

/**
 * The ACK's bytes in the set its message was read in (decodeFrame's `charset`): it echoes the
 * sender's own names (MSH-3 to MSH-6), which the sender reads in its own set. A character the set
 * lacks is written `?` (the ACK's own texts are ASCII).
 */
export function encodeAck(text: string, charset: string): Buffer {
  const set = charsetNamed(charset)
  if (set === null || set.encoding === 'utf-8') return Buffer.from(text, 'utf8')
  if (set.encoding === 'ascii') return Buffer.from(text.replace(/[^\0-\x7f]/g, '?'), 'latin1')
  return iconv.encode(text, set.encoding)
}

/** The AR of a frame decodeFrame refused, in ASCII; MSA-2 its control id when its MSH names one. */
export function charsetRefusal(rejection: CharsetRejection, headText: string): string {
  const error = { field: rejection.field, code: rejection.code, text: rejection.reason }
  if (headText.startsWith('MSH')) {
    try {
      const message = Hl7Message.parse(headText)
      // The AR is ASCII whatever the refused message declared.
      message.getSegment('MSH')?.setField(18, '')
      return ackFor(message, 'AR', rejection.reason, error)
    } catch {
      // Not even the MSH reads: answered without a control id below.
    }
  }
  return ackForUnparseable(rejection.reason, error)
}

/**
 * A message holding U+FFFD, the replacement character, carries text lost in a decoding step (bytes
 * not valid in the set it was read in): refused naming MSH-18, never stored as if it were text.
 */
export function screenDecoding(reading: AdtReading, text: string): AdtReading {
  if (reading.kind === 'rejected' || !text.includes('\uFFFD')) return reading
  const reason =
    'the message holds U+FFFD (replacement character): text lost in decoding; its bytes are not valid in the character set MSH-18 declares'
  return { kind: 'rejected', header: reading.header, rejection: { field: 'MSH-18', reason, code: 207 } }
}
