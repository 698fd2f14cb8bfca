import { isIP } from 'node:net'

const TRUST_PROXY_FORMS =
  "false, or the proxies' addresses and CIDR ranges, comma-separated: 127.0.0.1 for nginx on the same host, " +
  '10.0.0.0/8, ::1 (also loopback, linklocal, uniquelocal)'
const PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal'])

function isProxyAddress(entry: string): boolean {
  if (PROXY_NAMES.has(entry)) return true
  const [address = '', prefix, ...rest] = entry.split('/')
  const family = isIP(address)
  if (family === 0 || rest.length > 0) return false
  if (prefix === undefined) return true
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128)
}

/**
 * TRUST_PROXY as Fastify's trustProxy takes it, or why it is refused. The proxies are named by
 * address: the client's address is then the one the nearest untrusted hop gave, so what a client
 * writes into X-Forwarded-For itself is never believed. `true` trusted every hop (behind a proxy
 * that appends to the header, each client chose its own address, and with it its throttle key); a
 * hop count cannot tell the proxy from a client that connects directly and sends the header itself,
 * and Fastify 5 trusts no hop for one. Both are refused with a message naming the accepted form.
 */
export function readTrustProxy(raw: string | undefined): { value: string | false } | { problem: string } {
  const text = (raw ?? '').trim()
  if (text === '' || text.toLowerCase() === 'false') return { value: false }
  if (text.toLowerCase() === 'true') {
    return {
      problem: `true is no longer accepted: it trusted every hop of X-Forwarded-For, so each client could choose its own address; name the proxies instead: ${TRUST_PROXY_FORMS}`,
    }
  }
  if (/^\d+$/.test(text)) {
    return {
      problem: `a hop count cannot tell the proxy from a client that connects directly and sends the header itself; name the proxies instead: ${TRUST_PROXY_FORMS}`,
    }
  }
  const entries = text.split(',').map((entry) => entry.trim())
  const bad = entries.find((entry) => !isProxyAddress(entry))
  if (bad !== undefined)
    return { problem: `${JSON.stringify(bad)} is not an address or CIDR range; expected ${TRUST_PROXY_FORMS}` }
  return { value: entries.join(',') }
}
