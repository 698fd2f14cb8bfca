/**
 * MLLP framing (start block 0x0B, end block 0x1C 0x0D) with its limits: reads a connection's bytes
 * as they arrive, hands over each complete frame's bytes (between the blocks), and says when the
 * open frame grew past the limit or too many bytes arrived outside any frame. Each byte is looked
 * at once: an open frame is kept as the chunks it came in, never joined and scanned again.
 */
const VT = 0x0b
const FS = 0x1c
const CR = 0x0d
const END_BLOCK = Buffer.from([FS, CR])
/** Enough of a frame's start to hold its MSH segment, for the AR of a frame refused as a whole. */
export const HEAD_BYTES = 4096

export type MeterVerdict = 'ok' | 'too-large' | 'garbage'

export interface FrameMeterOptions {
  maxFrameBytes: number
  /** Bytes outside frames tolerated (line ends some engines put between frames ...). */
  maxGarbageBytes: number
}

export class FrameMeter {
  private inFrame = false
  /** Bytes of the open frame so far, its end block's FS included once read. */
  private frameBytes = 0
  private garbageBytes = 0
  private lastWasFs = false
  private parts: Buffer[] = []
  /** When the open frame started (null: none open). */
  openSince: number | null = null

  constructor(private readonly opts: FrameMeterOptions) {}

  /** The start of the open frame (up to HEAD_BYTES), for the AR of a frame too large. */
  head(): Buffer {
    return Buffer.concat(this.parts).subarray(0, HEAD_BYTES)
  }

  private open(now: number): void {
    this.inFrame = true
    this.frameBytes = 0
    this.lastWasFs = false
    this.parts = []
    this.openSince = now
  }

  private keep(part: Buffer): void {
    this.parts.push(part)
    this.frameBytes += part.length
  }

  /** The finished frame, copied out of the chunks (which may hold much more), without its FS. */
  private finish(): Buffer {
    const bytes = Buffer.concat(this.parts, this.frameBytes)
    this.inFrame = false
    this.garbageBytes = 0
    this.openSince = null
    this.parts = []
    return bytes.subarray(0, bytes.length - 1)
  }

  /** Reads one chunk; `now` starts the clock of a frame it opens. The frames it completed come first. */
  measure(chunk: Buffer, now: number): { frames: Buffer[]; verdict: MeterVerdict } {
    const frames: Buffer[] = []
    let pos = 0
    while (pos < chunk.length) {
      if (!this.inFrame) {
        const start = chunk.indexOf(VT, pos)
        this.garbageBytes += (start < 0 ? chunk.length : start) - pos
        if (this.garbageBytes > this.opts.maxGarbageBytes) return { frames, verdict: 'garbage' }
        if (start < 0) break
        this.open(now)
        pos = start + 1
        continue
      }
      // The end block may be split over two reads: FS at the end of one, CR at the start of the next.
      let close = this.lastWasFs && chunk[pos] === CR ? pos : -1
      if (close < 0) {
        const fs = chunk.indexOf(END_BLOCK, pos)
        close = fs < 0 ? -1 : fs + 1
      }
      if (close < 0) {
        this.keep(chunk.subarray(pos))
        this.lastWasFs = chunk[chunk.length - 1] === FS
        return { frames, verdict: this.frameBytes > this.opts.maxFrameBytes ? 'too-large' : 'ok' }
      }
      this.keep(chunk.subarray(pos, close))
      if (this.frameBytes > this.opts.maxFrameBytes + 1) return { frames, verdict: 'too-large' }
      frames.push(this.finish())
      pos = close + 1
    }
    return { frames, verdict: 'ok' }
  }
}
