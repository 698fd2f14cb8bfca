import { isIP } from 'node:net'

// Whether an address list (HL7_ALLOWED_ADDRESSES: "10.1.2.3, 10.20.0.0/16, ::1") lets every client
// in, however it is written: 0.0.0.0/0, ::/0, two halves (0.0.0.0/1, 128.0.0.0/1), ::ffff:0:0/96.
// Such a list is no allow-list. Addresses are numbers in the IPv6 space, an IPv4 one as the
// IPv4-mapped address (::ffff:a.b.c.d), as node:net's BlockList matches them.

const MAPPED_START = 0xffffn << 32n
const IPV4 = { start: MAPPED_START, end: MAPPED_START + 0xffffffffn }
const IPV6 = { start: 0n, end: (1n << 128n) - 1n }

type Range = { start: bigint; end: bigint }

function ipv4Number(address: string): bigint {
  return address.split('.').reduce((n, part) => (n << 8n) + BigInt(Number(part)), 0n)
}

function ipv6Number(address: string): bigint {
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(address)?.[1]
  const text = dotted === undefined ? address : `${address.slice(0, -dotted.length)}0:0`
  const [head = '', tail] = text.split('::')
  const left = head === '' ? [] : head.split(':')
  const right = tail === undefined || tail === '' ? [] : tail.split(':')
  const groups = [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
  const value = groups.reduce((n, group) => (n << 16n) + BigInt(Number.parseInt(group, 16)), 0n)
  return dotted === undefined ? value : value + ipv4Number(dotted)
}

/** The entry as a range of the IPv6 space, or null for an entry that is not an address or range. */
function rangeOf(entry: string): Range | null {
  const [address = '', prefix] = entry.split('/')
  const family = isIP(address)
  if (family === 0) return null
  const start = family === 4 ? MAPPED_START + ipv4Number(address) : ipv6Number(address)
  const bits = prefix === undefined ? 128 : Number(prefix) + (family === 4 ? 96 : 0)
  if (!Number.isInteger(bits) || bits > 128) return null
  const size = 1n << BigInt(128 - bits)
  const first = (start / size) * size
  return { start: first, end: first + size - 1n }
}

function covers(ranges: Range[], whole: Range): boolean {
  let next = whole.start
  for (const range of [...ranges].sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0))) {
    if (range.start > next) break
    if (range.end >= next) next = range.end + 1n
    if (next > whole.end) return true
  }
  return next > whole.end
}

/** Every IPv4 client, or every IPv6 client, is in the list. */
export function coversEveryAddress(text: string): boolean {
  const ranges = text
    .split(',')
    .map((entry) => rangeOf(entry.trim()))
    .filter((range): range is Range => range !== null)
  return covers(ranges, IPV4) || covers(ranges, IPV6)
}
