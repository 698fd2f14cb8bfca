import { BlockList, isIP } from 'node:net'

/**
 * The network side of the ADT listener's settings, read where config.ts checks them at start and
 * where the listener uses them: which clients may connect (HL7_ALLOWED_ADDRESSES) and which
 * senders may send (HL7_ALLOWED_SENDERS).
 */

/** HL7_ALLOWED_ADDRESSES ("10.1.2.3, 10.20.0.0/16, ::1") as a BlockList, or the entry that is wrong. */
export function parseAddressList(text: string): { list: BlockList; count: number } | { problem: string } {
  const list = new BlockList()
  const entries = text
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '')
  for (const entry of entries) {
    const [address = '', prefix, ...rest] = entry.split('/')
    const family = isIP(address)
    const type = family === 6 ? 'ipv6' : 'ipv4'
    if (family === 0 || rest.length > 0)
      return { problem: `${entry} is not an address or CIDR range (10.1.2.3, 10.20.0.0/16, fd00::/8)` }
    if (prefix === undefined) {
      list.addAddress(address, type)
      continue
    }
    const bits = Number(prefix)
    if (!/^\d{1,3}$/.test(prefix) || bits > (family === 4 ? 32 : 128))
      return { problem: `${entry}: /${prefix} is not a prefix length for an IPv${family} address` }
    list.addSubnet(address, bits, type)
  }
  return { list, count: entries.length }
}

/** Whether a client address is in the list (an IPv4 client seen as ::ffff:a.b.c.d counts as a.b.c.d). */
export function addressAllowed(list: BlockList, address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped) return list.check(mapped[1] as string, 'ipv4')
  const family = isIP(address)
  if (family === 0) return false
  return list.check(address, family === 6 ? 'ipv6' : 'ipv4')
}

/** A listen address only this machine can reach. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host)
}

/**
 * HL7_ALLOWED_SENDERS by MSH-3^MSH-4 pair: the client addresses each may send from (null: any the
 * listener admits). Empty: any sender. An entry may be bound to an address or range
 * (`LAB^GENERAL@10.1.2.7`); a pair named several times may come from any of its addresses, and
 * from anywhere if one of its entries is not bound.
 */
export type SenderRules = Map<string, BlockList | null>

export function parseSenders(text: string): { rules: SenderRules } | { problem: string } {
  const addresses = new Map<string, string[] | null>()
  const entries = text
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '')
  for (const entry of entries) {
    const at = entry.lastIndexOf('@')
    const pair = at < 0 ? entry : entry.slice(0, at)
    const from = at < 0 ? null : entry.slice(at + 1)
    if (pair === '' || from === '')
      return { problem: `${entry}: write MSH-3^MSH-4, or MSH-3^MSH-4@address (HIS^GENERAL@10.1.2.3)` }
    const known = addresses.get(pair)
    addresses.set(pair, from === null || known === null ? null : [...(known ?? []), from])
  }
  const rules: SenderRules = new Map()
  for (const [pair, from] of addresses) {
    if (from === null) {
      rules.set(pair, null)
      continue
    }
    const list = parseAddressList(from.join(','))
    if ('problem' in list) return { problem: `${pair}@: ${list.problem}` }
    rules.set(pair, list.list)
  }
  return { rules }
}

/** Whether a message naming `pair` (MSH-3^MSH-4) may come from `address` (an empty rule set: anyone). */
export function senderAllowed(rules: SenderRules, pair: string, address: string): boolean {
  if (rules.size === 0) return true
  const from = rules.get(pair)
  if (from === undefined) return false
  return from === null || addressAllowed(from, address)
}

/** Whether an IANA time zone (Europe/Berlin) is one this runtime knows. */
export function isKnownTimeZone(timeZone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone })
    return true
  } catch {
    return false
  }
}
