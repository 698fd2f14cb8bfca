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
