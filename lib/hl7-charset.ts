/**
 * The character sets of HL7 table 0211 (MSH-18) the ADT feed reads, by their HL7 names, and the
 * name the decoder (iconv-lite; Node's TextDecoder for UTF-8) knows each by. Only sets that keep
 * ASCII's bytes as ASCII: the header and the separators are read from the frame's bytes before
 * the text is decoded. docs/ADT.md, "Character sets".
 */
import iconv from 'iconv-lite'

export interface Charset {
  /** As HL7 writes it: `UNICODE UTF-8`, `8859/1`, `ASCII`. */
  hl7: string
  /** As the decoder knows it. */
  encoding: 'ascii' | 'utf-8' | `iso-8859-${number}`
}

/** The names a setting may take, for messages. */
export const CHARSET_NAMES = 'ASCII, 8859/1 to 8859/16 (no 8859/12), UNICODE UTF-8'

/** The set an HL7 name (MSH-18, HL7_CHARSET) stands for; null: not one the service reads. */
export function charsetNamed(name: string): Charset | null {
  const hl7 = name.trim().toUpperCase()
  if (hl7 === 'ASCII' || hl7 === 'ISO IR6') return { hl7, encoding: 'ascii' }
  if (hl7 === 'UNICODE UTF-8') return { hl7, encoding: 'utf-8' }
  const part = /^8859\/(\d{1,2})$/.exec(hl7)?.[1]
  if (part === undefined) return null
  const encoding = `iso-8859-${Number(part)}` as const
  return iconv.encodingExists(encoding) ? { hl7, encoding } : null
}
