import { randomBytes } from 'node:crypto'

// ObjectId-like ids: 4 bytes of seconds, 5 random bytes per process, a 3-byte counter.
// 24 lowercase hex characters, URL-safe, unique and roughly time-ordered.
const processPart = randomBytes(5).toString('hex')
let counter = randomBytes(3).readUIntBE(0, 3)

export function newId(now = Date.now()): string {
  counter = (counter + 1) % 0x1000000
  const seconds = Math.floor(now / 1000)
  return seconds.toString(16).padStart(8, '0') + processPart + counter.toString(16).padStart(6, '0')
}

export const ID_PATTERN = '^[0-9a-f]{24}$'
