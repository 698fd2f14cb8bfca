import type { FastifyBaseLogger } from 'fastify'

/**
 * Connections the listener closed without reading from them: over HL7_MAX_CONNECTIONS, or over the
 * places left to addresses not in HL7_RESERVED_ADDRESSES (`full`), from an address not in
 * HL7_ALLOWED_ADDRESSES (`address`), or whose TLS handshake failed or did not finish within
 * HL7_HANDSHAKE_TIMEOUT_MS (`handshake`); and messages answered AR because their sender is not in
 * HL7_ALLOWED_SENDERS (`sender`), which are kept nowhere else (not in the message log). Each is
 * counted; each address is logged once a minute at most, so a client retrying in a loop (or a
 * flood) writes a line a minute, not one a try, and the line says how many were refused since.
 */
export type RefusalReason = 'full' | 'address' | 'handshake' | 'sender'

const LOG_EVERY_MS = 60_000
/** Addresses remembered for that; past it the memory starts over (a flood of many addresses logs at most this many lines a minute). */
const MAX_ADDRESSES = 1024

const MESSAGES: Record<RefusalReason, string> = {
  full: 'HL7: a connection beyond HL7_MAX_CONNECTIONS was closed before anything was read',
  address: 'HL7: a client not in HL7_ALLOWED_ADDRESSES was refused',
  handshake: 'HL7: a TLS handshake failed or did not finish within HL7_HANDSHAKE_TIMEOUT_MS; connection closed',
  sender: 'HL7: a message from a sender not allowed by HL7_ALLOWED_SENDERS was answered AR and not logged',
}

export class RefusalLog {
  readonly counts: Record<RefusalReason, number> = { full: 0, address: 0, handshake: 0, sender: 0 }
  private readonly logged = new Map<string, { at: number; since: number }>()

  constructor(private readonly log: FastifyBaseLogger) {}

  /** `why`: what more can be said (the TLS error's code; a refused sender: the MSH-3^MSH-4 it claimed). */
  note(reason: RefusalReason, address: string, why?: string, now = Date.now()): void {
    this.counts[reason]++
    const key = `${reason} ${address}`
    const last = this.logged.get(key)
    if (last !== undefined && now - last.at < LOG_EVERY_MS) {
      last.since++
      return
    }
    if (this.logged.size >= MAX_ADDRESSES) this.logged.clear()
    this.logged.set(key, { at: now, since: 0 })
    this.log.warn({ remote: address, why, refusedSinceLastLine: last?.since ?? 0 }, MESSAGES[reason])
  }
}
