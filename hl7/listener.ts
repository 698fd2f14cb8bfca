import net, { type BlockList, type Socket } from 'node:net'
import tls from 'node:tls'
import { addressAllowed } from '../lib/hl7-network.js'
import { AdtConnection, type ConnectionOptions } from './connection.js'
import { RefusalLog } from './refusals.js'

export interface ListenerOptions extends ConnectionOptions {
  host: string
  port: number
  tls: { cert: Buffer; key: Buffer; ca: Buffer | null } | null
  /** Time a TLS client has to finish its handshake (HL7_HANDSHAKE_TIMEOUT_MS). */
  handshakeTimeoutMs: number
  /** Client addresses that may connect; null: any. */
  allowed: BlockList | null
  /** Connections open at once (HL7_MAX_CONNECTIONS); one more is closed before anything is read. */
  maxConnections: number
  /**
   * Places kept for these addresses (HL7_RESERVED_ADDRESSES, HL7_RESERVED_CONNECTIONS): other
   * clients may hold at most maxConnections - places of them. Null: none kept.
   */
  reserved: { addresses: BlockList; places: number } | null
}

/**
 * Idle time before TCP keepalive probes a connection. A sender whose host vanished without closing
 * (a reboot, a firewall forgetting the idle flow) would otherwise hold its place under
 * HL7_MAX_CONNECTIONS until HL7_IDLE_TIMEOUT_MS; the probes find it dead (with Linux's defaults,
 * about 12 minutes after the last byte: a minute idle, then 9 probes 75 s apart) and free the place.
 */
const KEEPALIVE_IDLE_MS = 60_000

/** A place under HL7_MAX_CONNECTIONS: taken as the TCP connection is accepted, before any TLS handshake. */
interface Place {
  socket: Socket
  reserved: boolean
  connection: AdtConnection | null
}

/** A TCP connection's name while it is open (the TLS socket and the one under it share it). */
const placeKey = (socket: Socket) => `${socket.remoteAddress}|${socket.remotePort}`

/** The MLLP listener: plain TCP, or TLS (mutual with a CA). */
export function createListener(opts: ListenerOptions) {
  const places = new Map<string, Place>()
  let othersOpen = 0
  const refusals = new RefusalLog(opts.log)

  /**
   * Takes a place for a client, or closes it before anything is read (or a TLS handshake): its
   * address is not allowed, or the places left to addresses not reserved are taken.
   */
  function admit(socket: Socket): boolean {
    const address = socket.remoteAddress ?? ''
    if (opts.allowed !== null && !addressAllowed(opts.allowed, address)) {
      socket.destroy()
      refusals.note('address', address)
      return false
    }
    const { reserved } = opts
    const isReserved = reserved !== null && addressAllowed(reserved.addresses, address)
    if (reserved !== null && !isReserved && othersOpen >= opts.maxConnections - reserved.places) {
      socket.destroy()
      refusals.note('full', address)
      return false
    }
    const key = placeKey(socket)
    places.set(key, { socket, reserved: isReserved, connection: null })
    if (!isReserved) othersOpen++
    socket.on('error', () => {})
    socket.once('close', () => {
      places.delete(key)
      if (!isReserved) othersOpen--
    })
    return true
  }

  /** A client admitted (and, over TLS, through its handshake): its messages are read from now on. */
  function accept(socket: Socket): void {
    const place = places.get(placeKey(socket))
    if (place === undefined) {
      socket.destroy()
      return
    }
    socket.setNoDelay(true)
    socket.setKeepAlive(true, KEEPALIVE_IDLE_MS)
    socket.on('error', () => {})
    place.connection = new AdtConnection(socket, opts)
  }

  const server = opts.tls
    ? tls.createServer({
        cert: opts.tls.cert,
        key: opts.tls.key,
        handshakeTimeout: opts.handshakeTimeoutMs,
        ...(opts.tls.ca === null ? {} : { ca: opts.tls.ca, requestCert: true, rejectUnauthorized: true }),
      })
    : net.createServer()
  // Node closes a connection over the limit as it accepts it, before any byte is read or a TLS
  // handshake starts, and before 'connection' (so before the address check): a flood of either
  // kind holds no memory beyond the sockets of the admitted connections.
  server.maxConnections = opts.maxConnections
  server.on('drop', (dropped) => refusals.note('full', dropped?.remoteAddress ?? ''))
  if (opts.tls) {
    server.on('connection', admit)
    server.on('secureConnection', accept)
    // A handshake that failed or timed out: the socket is closed here (Node leaves that to this
    // listener), so that it gives its place back at once.
    server.on('tlsClientError', (error: Error & { code?: string }, socket: Socket) => {
      refusals.note('handshake', socket.remoteAddress ?? '', error.code ?? error.message)
      socket.destroy()
    })
  } else server.on('connection', (socket: Socket) => admit(socket) && accept(socket))

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
    /** Places taken now (in a TLS handshake or reading), what they hold, and the refusals since the start. */
    connections() {
      let handshaking = 0
      let heldBytes = 0
      for (const place of places.values()) {
        if (place.connection === null) handshaking++
        else heldBytes += place.connection.heldBytes
      }
      return { open: places.size, handshaking, heldBytes, max: opts.maxConnections, refused: { ...refusals.counts } }
    },
    /** Stops accepting; every connection answers the messages in hand, then closes; handshakes are cut. */
    async close(): Promise<void> {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      const ending: Promise<void>[] = []
      for (const place of places.values()) {
        if (place.connection === null) place.socket.destroy()
        else ending.push(place.connection.endAfter(null))
      }
      await Promise.all(ending)
      await closed
    },
  }
}
