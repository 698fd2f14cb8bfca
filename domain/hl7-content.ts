/**
 * What counts as "the same message" for exactly-once (docs/ADT.md, "Exactly once"): every segment,
 * in order, character for character, MSH-7 and MSH-10 included; only the framing between segments
 * does not count. Interface engines and senders rewrite segment terminators (CR, LF, CRLF) and may
 * add or drop a last one, or empty lines, when they store and resend a message: none of that is
 * content. Anything inside a segment (a field, a trailing space, an escape written another way) is.
 */
import { createHash } from 'node:crypto'

/** The segments of a message's text, without the terminators and the empty lines between them. */
export function segmentsOf(text: string): string[] {
  return text.split(/\r\n|\r|\n/).filter((segment) => segment !== '')
}

/**
 * The digest kept with each logged message: SHA-256 (hex) of its segments joined by CR. It can
 * only confirm a guess of the whole message, byte for byte; it is not a readable copy of it.
 */
export function contentDigest(text: string): string {
  return createHash('sha256').update(segmentsOf(text).join('\r'), 'utf8').digest('hex')
}

/**
 * A stored ACK with nothing of the patient left, for the log once HL7_KEEP_DAYS have passed: an AA
 * keeps of its MSA-3 the word before the colon (`parked: bed B-3 of ward-a is occupied ...` becomes
 * `parked`, `applied` stays). MSH, MSA-1 and MSA-2 stay, so a resend still gets the same answer
 * code for the same control id. An AR's texts are the reading's own (a field missing, a control id
 * used before) and never name a patient: they stay.
 */
export function ackWithoutDetails(ack: string): string {
  const separator = ack.charAt(3)
  return ack
    .split('\r')
    .map((segment) => {
      const fields = segment.split(separator)
      if (fields[0] !== 'MSA' || fields[1] !== 'AA' || fields[3] === undefined) return segment
      fields[3] = fields[3].split(':')[0] as string
      return fields.join(separator)
    })
    .join('\r')
}
