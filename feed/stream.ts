import type { ServerResponse } from 'node:http'
import type { FeedResource } from '../db/repositories/feed.js'
import type { Principal } from '../domain/principal.js'
import { type FeedDelivery, sseFrame } from './views.js'

export type StreamEnd = 'client' | 'overflow' | 'token' | 'shutdown'

/**
 * One open `GET /events`: who reads, which resources, and how far it has got. `pos` is the seq of
 * the last event this stream has passed (sent, or skipped as not for it); the hub sends it only
 * events after that, so nothing is sent twice. Writes never wait: a client that reads slower than
 * the ward changes fills its socket buffer, and once more than `bufferLimit` bytes wait unsent its
 * connection is cut (the client resumes by id), so it costs the server a bounded amount of memory
 * (the limit plus one event) and delays no one else.
 */
export class FeedStream {
  pos: number
  live = false
  ended = false
  private readonly raw: ServerResponse
  private readonly bufferLimit: number
  private readonly endListeners: ((why: StreamEnd) => void)[] = []

  constructor(
    readonly viewer: Principal,
    readonly resources: ReadonlySet<FeedResource>,
    raw: ServerResponse,
    options: { pos: number; bufferLimit: number },
  ) {
    this.raw = raw
    this.pos = options.pos
    this.bufferLimit = options.bufferLimit
    raw.on('close', () => this.end('client'))
  }

  /** Passes an event; writes it if it is for this stream and its viewer may read it (true: written). */
  deliver(event: FeedDelivery): boolean {
    if (this.ended || event.seq <= this.pos) return false
    this.pos = event.seq
    if (!this.resources.has(event.resource)) return false
    const frame = event.frameFor(this.viewer)
    return frame !== null && this.write(frame)
  }

  /** `ready` (live from here) or `reset` (reload, then live from here): both carry the position. */
  announce(name: 'ready' | 'reset', seq: number): void {
    this.pos = seq
    this.write(sseFrame(seq, name, JSON.stringify({ lastEventId: String(seq) })))
  }

  /** Node's own signal that the socket buffer is full: a catching-up stream waits for 'drain'. */
  get congested(): boolean {
    return this.raw.writableNeedDrain
  }

  /** Resolves once the buffer has drained or the stream has ended. */
  drained(): Promise<void> {
    if (this.ended || !this.congested) return Promise.resolve()
    return new Promise((resolve) => {
      const done = () => {
        this.raw.off('drain', done)
        resolve()
      }
      this.raw.once('drain', done)
      this.onEnd(done)
    })
  }

  onEnd(listener: (why: StreamEnd) => void): void {
    if (this.ended) listener('client')
    else this.endListeners.push(listener)
  }

  /** Ends the stream: a clean end of the response, or cut at once when its buffer overflowed. */
  end(why: StreamEnd): void {
    if (this.ended) return
    this.ended = true
    if (why === 'overflow') this.raw.destroy()
    else if (why !== 'client') this.raw.end()
    for (const listener of this.endListeners.splice(0)) listener(why)
  }

  /**
   * The client is cut when it is behind, when what it has not read yet is over the limit; not for
   * the size of one event, which could otherwise cut every stream on every reconnect.
   */
  private write(frame: string): boolean {
    if (this.ended) return false
    if (this.raw.writableLength > this.limit()) {
      this.end('overflow')
      return false
    }
    this.raw.write(frame)
    return true
  }

  /**
   * Never below the response's own high-water mark: a catch-up waits only once Node reports the
   * buffer full (`congested`), and Node 22 raised that mark from 16 KB to 64 KB, so a smaller
   * limit would cut a catching-up stream before it was ever told to wait.
   */
  private limit(): number {
    return Math.max(this.bufferLimit, this.raw.writableHighWaterMark)
  }
}
