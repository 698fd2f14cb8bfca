import net, { type BlockList, type Socket } from 'node:net'
import tls from 'node:tls'
import type { Hl7Message } from '@medplum/core'
import { Hl7Connection, type Hl7ErrorEvent, type Hl7MessageEvent } from '@medplum/hl7'
import type { FastifyBaseLogger } from 'fastify'
import { addressAllowed } from '../lib/hl7-network.js'
import { FrameMeter } from './frame-meter.js'
import { RefusalLog } from './refusals.js'

export interface ListenerOptions {
  host: string
  port: number
  tls: { cert: Buffer; key: Buffer; ca: Buffer | null } | null
  /** Client addresses that may connect; null: any. */
  allowed: BlockList | null
  maxFrameBytes: number
  frameTimeoutMs: number
  /** Connections open at once (HL7_MAX_CONNECTIONS); one more is closed before anything is read. */
  maxConnections: number
  log: FastifyBaseLogger
  /** The ACK of one parsed message from a client address; never rejects (a failure is an AE). */
  answer(message: Hl7Message, remote: string): Promise<string>
  /** The AR of a frame the connection cannot take: too large, or not HL7 at all. */
  refuse(reason: 'too-large' | 'unparseable', headText: string): string
}

/** Messages received and not yet answered on one connection, past which it stops reading. */
const MAX_IN_HAND = 256
const MAX_GARBAGE_BYTES = 4096
/**
 * Idle time before TCP keepalive probes a connection. A sender whose host vanished without closing
 * (a reboot, a firewall forgetting the idle flow) would otherwise hold its place under
 * HL7_MAX_CONNECTIONS forever and lock the engine out once it reconnects; the probes find it dead
 * (with Linux's defaults, about 12 minutes after the last byte: a minute idle, then 9 probes 75 s
 * apart) and free the place.
 */
const KEEPALIVE_IDLE_MS = 60_000

/**
 * One sender's connection: messages are answered one after the other, in the order received (a
 * sender's order is the order of its events), while other connections go on at once. Each answer
 * is sent only when its write is durable (`answer` settles then).
 */
class AdtConnection {
  private chain: Promise<void> = Promise.resolve()
  private inHand = 0
  private timer: NodeJS.Timeout | null = null
  private readonly meter: FrameMeter
  private readonly connection: Hl7Connection
  private ending = false
  /** Messages the library handed over so far. */
  private received = 0
  /** The index of the first frame not to answer as a message (refused, or after the close began). */
  private lastTaken = Number.POSITIVE_INFINITY

  constructor(
    private readonly socket: Socket,
    private readonly opts: ListenerOptions,
  ) {
    this.meter = new FrameMeter({ maxFrameBytes: opts.maxFrameBytes, maxGarbageBytes: MAX_GARBAGE_BYTES })
    // Registered before the library's own listener, so a frame too large is seen before it is kept.
    socket.on('data', (chunk: Buffer) => this.measure(chunk))
    this.connection = new Hl7Connection(socket)
    this.connection.addEventListener('message', (event: Hl7MessageEvent) => this.take(event))
    this.connection.addEventListener('error', (event: Hl7ErrorEvent) => this.failed(event.error))
  }

  /** A message the library parsed: answered in turn, unless it is the refused frame or one after it. */
  private take(event: Hl7MessageEvent): void {
    const index = this.received++
    if (index < this.lastTaken) this.enqueue(() => this.opts.answer(event.message, this.socket.remoteAddress ?? ''))
  }

  private measure(chunk: Buffer): void {
    if (this.ending) return
    const verdict = this.meter.measure(chunk, Date.now())
    if (verdict === 'too-large') {
      this.opts.log.warn(
        { remote: this.socket.remoteAddress },
        'HL7: a frame larger than HL7_MAX_MESSAGE_BYTES; AR, connection closed',
      )
      const head = this.meter.headText()
      // The frames before it in this chunk are handed over by the library's listener, after this one:
      // they are answered first; the refused frame, if the library parses it too, is not taken.
      this.lastTaken = this.meter.framesDone
      this.socket.pause()
      process.nextTick(() => this.endAfter(() => Promise.resolve(this.opts.refuse('too-large', head))))
    } else if (verdict === 'garbage') {
      this.opts.log.warn({ remote: this.socket.remoteAddress }, 'HL7: bytes outside MLLP frames; connection closed')
      this.endAfter(null)
    } else this.watchFrame()
  }

  /** One timer a connection: a frame left open longer than the limit closes it. */
  private watchFrame(): void {
    const since = this.meter.openSince
    if (since === null || this.timer !== null) return
    this.timer = setTimeout(
      () => {
        this.timer = null
        const open = this.meter.openSince
        if (open === null) return
        if (Date.now() - open >= this.opts.frameTimeoutMs) {
          this.opts.log.warn(
            { remote: this.socket.remoteAddress },
            'HL7: a frame not finished in time; connection closed',
          )
          this.endAfter(null)
        } else this.watchFrame()
      },
      this.opts.frameTimeoutMs - (Date.now() - since),
    )
    this.timer.unref()
  }

  private failed(error: Error): void {
    if (isLibraryNotice(error)) {
      // The library takes any message with an MSA segment for an answer to something it sent, and
      // warns that it knows no such message; the message itself still comes to us and is answered.
      this.opts.log.debug({ remote: this.socket.remoteAddress }, 'HL7: a message with an MSA segment')
      return
    }
    if ((error as { code?: unknown }).code !== undefined) {
      // The socket's own trouble (a reset): nothing to answer on it.
      this.opts.log.debug({ err: error, remote: this.socket.remoteAddress }, 'HL7: connection error')
      return
    }
    // The library could not parse a frame; it drops what it read with it, so the sender is told and
    // the connection closed: it reconnects and sends again whatever was not acknowledged.
    this.opts.log.warn(
      { remote: this.socket.remoteAddress },
      'HL7: a frame that is not an HL7 message; AR, connection closed',
    )
    this.endAfter(() => Promise.resolve(this.opts.refuse('unparseable', '')))
  }

  private enqueue(answer: () => Promise<string>): void {
    this.inHand++
    if (this.inHand >= MAX_IN_HAND) this.socket.pause()
    this.chain = this.chain
      .then(answer)
      .then((ack) => this.send(ack))
      .catch((error: unknown) => this.opts.log.error({ err: error }, 'HL7: an answer could not be sent'))
      .finally(() => {
        this.inHand--
        if (this.inHand < MAX_IN_HAND && !this.ending) this.socket.resume()
      })
  }

  /**
   * The ACK framed as the library's send frames it (VT, the text in the connection's encoding: UTF-8,
   * the library's default, which the connection keeps; FS CR), without parsing the text we just
   * wrote into the library's objects and printing it again.
   */
  private send(ack: string): void {
    if (this.socket.destroyed) return
    this.socket.write(frame(ack))
  }

  /** Stops reading; answers what is in hand (and `last`, if any), then closes. */
  endAfter(last: (() => Promise<string>) | null): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer)
    if (!this.ending) {
      this.ending = true
      this.socket.pause()
      if (last !== null) this.enqueue(last)
    }
    return this.chain.then(() => {
      this.socket.end()
      this.socket.destroySoon()
    })
  }
}

/** The MLLP listener: plain TCP, or TLS (mutual with a CA). */
export function createListener(opts: ListenerOptions) {
  const connections = new Set<AdtConnection>()
  const refusals = new RefusalLog(opts.log)

  function accept(socket: Socket): void {
    socket.setNoDelay(true)
    socket.setKeepAlive(true, KEEPALIVE_IDLE_MS)
    socket.on('error', () => {})
    const connection = new AdtConnection(socket, opts)
    connections.add(connection)
    socket.on('close', () => connections.delete(connection))
  }

  /** Refuses a client whose address is not allowed, before anything is read (or a TLS handshake). */
  function screen(socket: Socket): boolean {
    const address = socket.remoteAddress ?? ''
    if (opts.allowed === null || addressAllowed(opts.allowed, address)) return true
    socket.destroy()
    refusals.note('address', address)
    return false
  }

  const server = opts.tls
    ? tls.createServer({
        cert: opts.tls.cert,
        key: opts.tls.key,
        ...(opts.tls.ca === null ? {} : { ca: opts.tls.ca, requestCert: true, rejectUnauthorized: true }),
      })
    : net.createServer()
  // Node closes a connection over the limit as it accepts it, before any byte is read or a TLS
  // handshake starts, and before 'connection' (so before the address check): a flood of either
  // kind holds no memory beyond the sockets of the allowed connections.
  server.maxConnections = opts.maxConnections
  server.on('drop', (dropped) => refusals.note('full', dropped?.remoteAddress ?? ''))
  if (opts.tls) {
    server.on('connection', screen)
    server.on('secureConnection', accept)
    server.on('tlsClientError', (error) => opts.log.warn({ err: error }, 'HL7: a TLS handshake failed'))
  } else server.on('connection', (socket: Socket) => screen(socket) && accept(socket))

  return {
    async start(): Promise<number> {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject)
        server.listen(opts.port, opts.host, () => {
          server.off('error', reject)
          resolve()
        })
      })
      return (server.address() as net.AddressInfo).port
    },
    /** Connections open now, and those closed unread since the start (over the limit, or not allowed). */
    connections() {
      return { open: connections.size, max: opts.maxConnections, refused: { ...refusals.counts } }
    },
    /** Stops accepting; every connection answers the messages in hand, then closes. */
    async close(): Promise<void> {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      await Promise.all([...connections].map((c) => c.endAfter(null)))
      await closed
    },
  }
}

const VT = 0x0b
const FS = 0x1c
const CR = 0x0d

/** One MLLP frame: VT, the text in UTF-8, FS CR. */
function frame(text: string): Buffer {
  const length = Buffer.byteLength(text, 'utf8')
  const out = Buffer.allocUnsafe(length + 3)
  out[0] = VT
  out.write(text, 1, 'utf8')
  out[length + 1] = FS
  out[length + 2] = CR
  return out
}

/** A warning of the MLLP library about a message it still delivers, not a frame it failed to read. */
function isLibraryNotice(error: Error): boolean {
  const outcome = (error as { outcome?: { issue?: { severity?: string }[] } }).outcome
  return outcome?.issue?.every((issue) => issue.severity === 'warning') === true && outcome.issue.length > 0
}
