import type { Socket } from 'node:net'
import { Hl7Message } from '@medplum/core'
import type { FastifyBaseLogger } from 'fastify'
import { charsetRefusal, decodeFrame, encodeAck } from './charset.js'
import { FrameMeter, HEAD_BYTES } from './frame-meter.js'
import type { FrameRefusal } from './frame-refusal.js'
import { frameText, type ShapeLimits, shapeExcess } from './frame-text.js'

export interface ConnectionOptions extends ShapeLimits {
  maxFrameBytes: number
  frameTimeoutMs: number
  /** A connection that neither sends nor takes an answer for this long is closed (HL7_IDLE_TIMEOUT_MS). */
  idleTimeoutMs: number
  /**
   * What one connection may hold: frames received and not yet answered, plus answers written and
   * not yet taken by the client. Past it the connection stops reading, and answers no further
   * message until the client took its answers.
   */
  maxHeldBytes: number
  /** The character set of a message whose MSH-18 is empty (HL7_CHARSET). */
  charset: string
  log: FastifyBaseLogger
  /** The ACK of one parsed message from a client address; never rejects (a failure is an AE). */
  answer(message: Hl7Message, remote: string): Promise<string>
  /** The AR of a frame refused as a whole (too large, too many segments or fields, not HL7). */
  refuse(reason: FrameRefusal, headText: string): string
}

/** An ACK as text (ASCII, or UTF-8), or with the character set of the message it answers. */
type Answer = string | { ack: string; charset: string }

const MAX_GARBAGE_BYTES = 4096
/**
 * What a frame in hand costs besides its bytes (its buffer, its place in the answer chain, about
 * 2 KB of heap), counted as held: a client sending tiny frames (VT MSH|^~\& FS CR) would otherwise
 * hold a hundred thousand of them, some 200 MB, within a limit counted in bytes.
 */
const FRAME_COST = 4096
/** How long a closing connection may take to send its last answers before it is cut. */
const CLOSE_GRACE_MS = 5000
const VT = 0x0b
const FS = 0x1c
const CR = 0x0d

/** The next turn of the event loop: one connection's frames never hold the others' for long. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * One sender's connection: its frames are answered one after the other, in the order received (a
 * sender's order is the order of its events), each parsed in a turn of its own, while other
 * connections go on at once. Each answer is sent only when its write is durable (`answer` settles
 * then).
 */
export class AdtConnection {
  private chain: Promise<void> = Promise.resolve()
  /** Bytes of the frames received and not yet answered. */
  private queuedBytes = 0
  private lastActive = Date.now()
  private timer: NodeJS.Timeout | null = null
  private timerAt = Number.POSITIVE_INFINITY
  private readonly meter: FrameMeter
  private ending = false
  /** A frame was refused and the connection is closing: the frames after it are not answered. */
  private refused = false
  /** Ends the wait of answersTaken: a closing connection waits no more on a client that does not read. */
  private stopWaiting: (() => void) | null = null

  constructor(
    private readonly socket: Socket,
    private readonly opts: ConnectionOptions,
  ) {
    this.meter = new FrameMeter({ maxFrameBytes: opts.maxFrameBytes, maxGarbageBytes: MAX_GARBAGE_BYTES })
    socket.on('data', (chunk: Buffer) => this.receive(chunk))
    socket.on('drain', () => {
      this.lastActive = Date.now()
      this.flow()
    })
    this.arm(this.lastActive + opts.idleTimeoutMs)
  }

  /** What the connection holds now: frames in hand and answers not yet taken by the client. */
  get heldBytes(): number {
    return this.queuedBytes + this.socket.writableLength
  }

  private get remote(): string {
    return this.socket.remoteAddress ?? ''
  }

  private receive(chunk: Buffer): void {
    if (this.ending) return
    this.lastActive = Date.now()
    const { frames, verdict } = this.meter.measure(chunk, this.lastActive)
    for (const bytes of frames) this.take(bytes)
    if (verdict === 'too-large') {
      this.opts.log.warn(
        { remote: this.remote },
        'HL7: a frame larger than HL7_MAX_MESSAGE_BYTES; AR, connection closed',
      )
      const head = frameText(this.meter.head())
      void this.endAfter(() => this.opts.refuse('too-large', head))
      return
    }
    if (verdict === 'garbage') {
      this.opts.log.warn({ remote: this.remote }, 'HL7: bytes outside MLLP frames; connection closed')
      void this.endAfter(null)
      return
    }
    if (this.meter.openSince !== null) this.arm(this.meter.openSince + this.opts.frameTimeoutMs)
    this.flow()
  }

  private take(bytes: Buffer): void {
    const held = bytes.length + FRAME_COST
    this.queuedBytes += held
    this.enqueue(async () => {
      await nextTurn()
      return this.read(bytes)
    }, held)
  }

  /** The answer to one frame: its ACK, the AR of a frame refused as a whole, or null after a refusal. */
  private async read(bytes: Buffer): Promise<Answer | null> {
    if (this.refused) return null
    const excess = shapeExcess(bytes, this.opts)
    if (excess !== null) {
      this.opts.log.warn(
        { remote: this.remote, limit: excess },
        'HL7: a frame past HL7_MAX_SEGMENTS or HL7_MAX_FIELDS; AR',
      )
      return this.opts.refuse(excess, frameText(bytes.subarray(0, HEAD_BYTES)))
    }
    const decoded = decodeFrame(bytes, this.opts.charset)
    if ('rejection' in decoded) {
      // Like a frame past a limit: answered, never logged (its text could not be read as text).
      this.opts.log.warn({ remote: this.remote }, 'HL7: a frame not readable in its character set (MSH-18); AR')
      return charsetRefusal(decoded.rejection, decoded.headText)
    }
    let message: Hl7Message
    try {
      message = Hl7Message.parse(decoded.text)
    } catch {
      // Kept from when the MLLP library framed: a frame that is not HL7 says the sender is not
      // speaking HL7 at all; it is told, and the connection closed.
      this.opts.log.warn({ remote: this.remote }, 'HL7: a frame that is not an HL7 message; AR, connection closed')
      this.refused = true
      void this.endAfter(null)
      return this.opts.refuse('unparseable', '')
    }
    // The sender reads its ACK in its own set: the ACK echoes its names (MSH-3 to MSH-6).
    return { ack: await this.opts.answer(message, this.remote), charset: decoded.charset }
  }

  private enqueue(answer: () => Promise<Answer | null> | Answer | null, bytes = 0): void {
    this.chain = this.chain
      .then(() => this.answersTaken())
      .then(answer)
      .then((ack) => {
        if (ack !== null) this.send(ack)
      })
      .catch((error: unknown) => this.opts.log.error({ err: error }, 'HL7: an answer could not be sent'))
      .finally(() => {
        this.queuedBytes -= bytes
        this.flow()
      })
  }

  /** Waits while the answers written exceed what the connection may hold (not while it closes). */
  private answersTaken(): Promise<void> | undefined {
    if (this.ending || this.socket.destroyed || this.socket.writableLength <= this.opts.maxHeldBytes) return
    return new Promise<void>((resolve) => {
      const done = () => {
        this.socket.off('drain', done)
        this.socket.off('close', done)
        this.stopWaiting = null
        resolve()
      }
      this.stopWaiting = done
      this.socket.on('drain', done)
      this.socket.on('close', done)
    })
  }

  /** Reads while the connection holds less than its limit; stops reading past it. */
  private flow(): void {
    if (this.ending || this.socket.destroyed) return
    const over = this.heldBytes > this.opts.maxHeldBytes
    if (over && !this.socket.isPaused()) this.socket.pause()
    else if (!over && this.socket.isPaused()) {
      // The open frame waited on us, not on the client: its time starts again.
      if (this.meter.openSince !== null) this.meter.openSince = Date.now()
      this.socket.resume()
    }
  }

  /** The ACK framed: VT, the text (UTF-8, or the set its message was read in), FS CR. */
  private send(answer: Answer): void {
    if (this.socket.destroyed) return
    const ack = typeof answer === 'string' ? answer : answer.ack
    const encoded = typeof answer === 'string' ? null : encodeAck(ack, answer.charset)
    const length = encoded === null ? Buffer.byteLength(ack, 'utf8') : encoded.length
    const out = Buffer.allocUnsafe(length + 3)
    out[0] = VT
    if (encoded === null) out.write(ack, 1, 'utf8')
    else encoded.copy(out, 1)
    out[length + 1] = FS
    out[length + 2] = CR
    this.socket.write(out)
    this.lastActive = Date.now()
  }

  /** One timer a connection, set for the earliest of the open frame's deadline and the idle one. */
  private arm(at: number): void {
    if (this.ending || (this.timer !== null && this.timerAt <= at)) return
    if (this.timer !== null) clearTimeout(this.timer)
    this.timerAt = at
    this.timer = setTimeout(() => this.check(), Math.max(0, at - Date.now()))
    this.timer.unref()
  }

  private check(): void {
    this.timer = null
    this.timerAt = Number.POSITIVE_INFINITY
    const now = Date.now()
    const open = this.meter.openSince
    // While the connection does not read (it holds its limit), an open frame cannot finish.
    const waiting = this.socket.isPaused()
    if (open !== null && !waiting && now - open >= this.opts.frameTimeoutMs) {
      this.opts.log.warn({ remote: this.remote }, 'HL7: a frame not finished in time; connection closed')
      void this.endAfter(null)
      return
    }
    if (now - this.lastActive >= this.opts.idleTimeoutMs) {
      this.opts.log.info({ remote: this.remote }, 'HL7: a connection idle for HL7_IDLE_TIMEOUT_MS; closed')
      void this.endAfter(null)
      return
    }
    const frameAt = open === null ? Number.POSITIVE_INFINITY : (waiting ? now : open) + this.opts.frameTimeoutMs
    this.arm(Math.min(frameAt, this.lastActive + this.opts.idleTimeoutMs))
  }

  /** Stops reading; answers what is in hand (and `last`, if any), then closes. */
  endAfter(last: (() => string) | null): Promise<void> {
    if (!this.ending) {
      if (this.timer !== null) clearTimeout(this.timer)
      this.ending = true
      this.socket.pause()
      this.stopWaiting?.()
      if (last !== null) this.enqueue(last)
    }
    return this.chain.then(() => {
      this.socket.end()
      this.socket.destroySoon()
      // A client that does not take its last answers holds no place for long.
      setTimeout(() => this.socket.destroy(), CLOSE_GRACE_MS).unref()
    })
  }
}
