import { Type } from '@sinclair/typebox'
import { CHARSET_NAMES, charsetNamed } from './hl7-charset.js'

/**
 * The ADT settings about a message's header: the character set of a message without MSH-18, and
 * the processing ids (MSH-11) applied to the ward (docs/ADT.md, "Character sets", "Processing ids").
 */
export const HL7_HEADER_SETTINGS = {
  HL7_CHARSET: Type.String({
    minLength: 1,
    default: 'UNICODE UTF-8',
    description: `character set of a message whose MSH-18 is empty, as HL7 names it (${CHARSET_NAMES})`,
  }),
  HL7_PROCESSING_IDS: Type.String({
    minLength: 1,
    default: 'P',
    description:
      'processing ids (MSH-11: P production, D debugging, T training) whose messages are applied, comma-separated; others get AR',
  }),
}

/** HL7 table 0103: production, debugging, training. */
export const PROCESSING_IDS = ['P', 'D', 'T'] as const

/** HL7_PROCESSING_IDS as a list: `P`, `P,T` ... */
export function parseProcessingIds(text: string): string[] {
  return text
    .split(',')
    .map((id) => id.trim().toUpperCase())
    .filter((id) => id !== '')
}

export function hl7HeaderProblems(config: { HL7_CHARSET: string; HL7_PROCESSING_IDS: string }): [string, string][] {
  const problems: [string, string][] = []
  if (charsetNamed(config.HL7_CHARSET) === null)
    problems.push(['HL7_CHARSET', `is not a character set the feed reads (${CHARSET_NAMES})`])
  const ids = parseProcessingIds(config.HL7_PROCESSING_IDS)
  if (ids.length === 0 || ids.some((id) => !(PROCESSING_IDS as readonly string[]).includes(id)))
    problems.push([
      'HL7_PROCESSING_IDS',
      `lists processing ids of HL7 table 0103, comma-separated: ${PROCESSING_IDS.join(', ')}`,
    ])
  return problems
}
