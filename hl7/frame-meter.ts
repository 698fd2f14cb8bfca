/**
 * Limits the library's MLLP connection does not have. @medplum/hl7's Hl7Connection frames and
 * parses (start block 0x0B, end block 0x1C 0x0D), but keeps an unfinished frame in memory without
 * bound and waits for its end forever. This meter reads the same bytes beside it and only measures:
 * how large the open frame is, how long it has been open, and how many bytes arrived outside any
 * frame. It delivers nothing; the connection still does all the framing.
 */
const VT = 0x0b
const FS = 0x1c
const CR = 0x0d
/** Enough of a frame's start to hold its MSH segment, for the AR of a frame too large. */
const HEAD_BYTES = 4096

export type MeterVerdict = 'ok' | 'too-large' | 'garbage'

export interface FrameMeterOptions {
  maxFrameBytes: number
  /** Bytes outside frames tolerated (line ends some engines put between frames ...). */
  maxGarbageBytes: number
}

export class FrameMeter {
  private inFrame = false
  private frameBytes = 0
  private garbageBytes = 0
  private lastWasFs = false
  private head: Buffer[] = []
  private headBytes = 0
  /** When the open frame started (null: none open). */
  openSince: number | null = null
  /** Frames completed so far: the index the next (or the open) frame will have. */
  framesDone = 0

  constructor(private readonly opts: FrameMeterOptions) {}

  /** The start of the open frame (up to 4 KiB), as text. */
  headText(): string {
    return Buffer.concat(this.head).toString('utf8')
  }

  private keepHead(chunk: Buffer): void {
    if (this.headBytes >= HEAD_BYTES) return
    const part = chunk.subarray(0, HEAD_BYTES - this.headBytes)
    this.head.push(part)
    this.headBytes += part.length
  }

  /** Measures one chunk as it arrives; `now` starts the clock of a frame it opens. */
  measure(chunk: Buffer, now: number): MeterVerdict {
    let pos = 0
    while (pos < chunk.length) {
      if (!this.inFrame) {
        const start = chunk.indexOf(VT, pos)
        const end = start < 0 ? chunk.length : start
        this.garbageBytes += end - pos
        if (this.garbageBytes > this.opts.maxGarbageBytes) return 'garbage'
        if (start < 0) return 'ok'
        Object.assign(this, { inFrame: true, frameBytes: 0, lastWasFs: false, head: [], headBytes: 0, openSince: now })
        pos = start + 1
        continue
      }
      // The end block may be split over two reads: FS at the end of one, CR at the start of the next.
      let close = this.lastWasFs && chunk[pos] === CR ? pos : -1
      if (close < 0) {
        const fs = chunk.indexOf(Buffer.from([FS, CR]), pos)
        close = fs < 0 ? -1 : fs + 1
      }
      if (close < 0) {
        this.keepHead(chunk.subarray(pos))
        this.frameBytes += chunk.length - pos
        this.lastWasFs = chunk[chunk.length - 1] === FS
        return this.frameBytes > this.opts.maxFrameBytes ? 'too-large' : 'ok'
      }
      this.keepHead(chunk.subarray(pos, close))
      this.frameBytes += close - pos
      if (this.frameBytes > this.opts.maxFrameBytes + 1) return 'too-large'
      Object.assign(this, { inFrame: false, garbageBytes: 0, openSince: null, framesDone: this.framesDone + 1 })
      pos = close + 1
    }
    return 'ok'
  }
}
