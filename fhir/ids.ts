import { createHash } from 'node:crypto'

/**
 * Stable FHIR ids (`[A-Za-z0-9\-\.]{1,64}`) for the ward's places and encounters, derived from
 * their names alone, so they are the same after a restart or a restore. Pure.
 *
 * The id is a kind prefix (`wa-`, `ro-`, `bd-`, `en-`) and the names, each kept as it is where it
 * uses only letters, digits and `-`, any other byte written `.` + two lowercase hex digits, the
 * names joined by `..` (an escape is always `.` and two hex digits, so `..` is never part of one):
 * bed `A 12` of facility `ward-a` is `bd-ward-a..A.2012`. An id that would be longer than 64
 * characters is the prefix, a `.` and the base32 SHA-256 (52 characters) of the names
 * instead (`bd.` ...): still stable, no longer readable.
 */
export type IdKind = 'ward' | 'room' | 'bed' | 'encounter'

const PREFIX: Readonly<Record<IdKind, string>> = { ward: 'wa', room: 'ro', bed: 'bd', encounter: 'en' }
const MAX_ID = 64

export const FHIR_ID = /^[A-Za-z0-9\-.]{1,64}$/

function escapePart(part: string): string {
  let out = ''
  for (const byte of Buffer.from(part, 'utf8')) {
    const char = String.fromCharCode(byte)
    out += /[A-Za-z0-9-]/.test(char) ? char : `.${byte.toString(16).padStart(2, '0')}`
  }
  return out
}

const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567'

function base32(bytes: Uint8Array): string {
  let out = ''
  let bits = 0
  let value = 0
  for (const byte of bytes) {
    value = (value << 8) | byte
    bits += 8
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31]
      bits -= 5
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31]
  return out
}

/** The id of a place or an encounter; `names` are the facility ('' for none) and the names under it. */
export function fhirId(kind: IdKind, names: readonly string[]): string {
  const readable = `${PREFIX[kind]}-${names.map(escapePart).join('..')}`
  if (readable.length <= MAX_ID) return readable
  const digest = createHash('sha256').update(names.join('\u0000'), 'utf8').digest()
  return `${PREFIX[kind]}.${base32(digest)}`
}

/**
 * The names an id was made of, for a readable id of that kind; null for a hashed id (the caller
 * compares the ids of the candidates instead) or an id that is not of that kind.
 */
export function namesOfId(kind: IdKind, id: string): string[] | null {
  const prefix = `${PREFIX[kind]}-`
  if (!id.startsWith(prefix) || !FHIR_ID.test(id)) return null
  const names: string[] = []
  let bytes: number[] = []
  const body = id.slice(prefix.length)
  for (let i = 0; i < body.length; i++) {
    const char = body[i] as string
    if (char !== '.') {
      bytes.push(char.charCodeAt(0))
      continue
    }
    if (body[i + 1] === '.') {
      names.push(Buffer.from(bytes).toString('utf8'))
      bytes = []
      i++
      continue
    }
    const hex = body.slice(i + 1, i + 3)
    if (!/^[0-9a-f]{2}$/.test(hex)) return null
    bytes.push(Number.parseInt(hex, 16))
    i += 2
  }
  names.push(Buffer.from(bytes).toString('utf8'))
  // Only the one spelling fhirId makes counts: `A.2d` (an escaped `-`) is not the id of `A-`.
  return fhirId(kind, names) === id ? names : null
}

/** Whether an id is a hashed one of that kind (its names must be found by comparing ids). */
export function isHashedId(kind: IdKind, id: string): boolean {
  return id.startsWith(`${PREFIX[kind]}.`) && FHIR_ID.test(id)
}
