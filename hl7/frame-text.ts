/**
 * What a frame's bytes are before they are a message: their shape counted on the bytes, so a frame
 * the parser would spend long on is refused unparsed. A message's text is read in its MSH-18's
 * character set (hl7/charset.ts); the start of a frame refused as a whole only for its MSH.
 */

/** The start of a refused frame as text, for the MSH its AR answers (the MSH fields are ASCII). */
export function frameText(bytes: Buffer): string {
  return bytes.toString('utf8')
}

export interface ShapeLimits {
  /** Segments of one message (HL7_MAX_SEGMENTS). */
  maxSegments: number
  /** Fields, field repetitions and components of one message, all segments together (HL7_MAX_FIELDS). */
  maxFields: number
}

export type ShapeExcess = 'segments' | 'fields'

const CR = 0x0d
const LF = 0x0a
const M = 0x4d
const S = 0x53
const H = 0x48

/**
 * Which limit a frame passes, counted as the parser will split it: a segment per run of CR and LF,
 * an element per field, repetition or component separator, as MSH-1 and MSH-2 name them. The
 * separators are ASCII, so counting bytes counts them in any ASCII-compatible encoding. A frame
 * that does not start with MSH is left to the parser, which refuses it at once.
 */
export function shapeExcess(bytes: Buffer, limits: ShapeLimits): ShapeExcess | null {
  if (bytes.length < 8 || bytes[0] !== M || bytes[1] !== S || bytes[2] !== H) return null
  const field = bytes[3]
  const component = bytes[4]
  const repetition = bytes[5]
  let segments = 1
  let elements = 0
  let lineEnd = false
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]
    if (byte === CR || byte === LF) {
      if (!lineEnd && ++segments > limits.maxSegments) return 'segments'
      lineEnd = true
      continue
    }
    lineEnd = false
    if ((byte === field || byte === component || byte === repetition) && ++elements > limits.maxFields) return 'fields'
  }
  return null
}
