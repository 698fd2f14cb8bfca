import type { FeedLog } from '../db/repositories/feed.js'
import type { Principal } from '../domain/principal.js'
import { tokenRefusal } from '../domain/principal.js'
import type { FeedStream } from './stream.js'
import { FeedDelivery } from './views.js'

const PAGE = 500

export interface HubLimits {
  maxStreams: number
  maxStreamsPerToken: number
}

export type OpenRefusal = 'too-many-streams' | 'too-many-streams-for-token'

/** What the feed asks of a stream's token at each check. */
export interface TokenStanding {
  expiresAt: number | null
  revokedAt: number | null
  facility: string | null
  role: string
}

/**
 * Reads the feed log in seq order and hands each committed event to every live stream. It reads
 * only after a transaction is over (woken by an append, on the next turn of the event loop) and
 * also every `pollMs`, for what other processes commit (the command-line tool). Everything here
 * runs on the one event loop, so a stream switches from catching up to live between two reads of
 * the log, and no event can fall between the two.
 */
/** Since the start: events written to streams, and streams cut for a reader too slow. */
export interface HubCounts {
  delivered: number
  cut: number
}

export class FeedHub {
  readonly counts: HubCounts = { delivered: 0, cut: 0 }
  private readonly streams = new Set<FeedStream>()
  // The streams by their token's facility (null: tokens without one), so an event is offered only
  // to the streams that might see it: a ward's writes cost nothing to another ward's open boards.
  private readonly byFacility = new Map<string | null, Set<FeedStream>>()
  private readonly perToken = new Map<string, number>()
  private cursor: number
  private wakeScheduled = false
  private stopped = false

  constructor(
    private readonly log: FeedLog,
    private readonly limits: HubLimits,
    /** A read of the log that failed on a timer (an I/O error): told, never thrown into the event loop. */
    private readonly onReadError: (error: unknown) => void = () => {},
    /**
     * Undefined when every commit of the server's connection is on disk, else when they will be
     * (the write queue's whenDurable): the hub reads the log only then, so no stream is told of a
     * change a power cut could still take back.
     */
    private readonly whenDurable: () => Promise<void> | undefined = () => undefined,
  ) {
    this.cursor = log.head()
  }

  get size(): number {
    return this.streams.size
  }

  /** How many streams are still being sent what they missed (not live yet). */
  get catchingUp(): number {
    let count = 0
    for (const stream of this.streams) if (!stream.live) count++
    return count
  }

  /** How many catching-up streams wait for their reader: the socket's buffers are full. */
  get waitingForReaders(): number {
    let count = 0
    for (const stream of this.streams) if (!stream.live && stream.congested) count++
    return count
  }

  /** Reads what was committed since the last read, on the next turn (never inside a transaction). */
  wake(): void {
    if (this.wakeScheduled) return
    this.wakeScheduled = true
    setImmediate(() => {
      this.wakeScheduled = false
      this.pumpSafely()
    })
  }

  /** pump() for timers: a failing read is reported and tried again on the next turn. */
  pumpSafely(): void {
    try {
      this.pump()
    } catch (error) {
      this.onReadError(error)
    }
  }

  pump(): void {
    if (this.stopped) return
    const durable = this.whenDurable()
    if (durable === undefined) {
      this.pumpThrough(Number.MAX_SAFE_INTEGER)
      return
    }
    // What the log holds now is on disk once that sync returns: delivered then, up to here only,
    // so a stream of writes, each committed during the sync before it, never holds the feed back.
    // A failed sync delivers nothing more (the write queue refuses everything until a restart).
    // Delivered on the turn after the sync: the answers that waited for it (HTTP replies, ADT
    // ACKs, whose senders wait to send the next write) leave first, and the streams a moment after.
    const target = this.log.head()
    durable.then(
      () =>
        // Nobody listening: only the position moves, at once (no turn of the event loop for it).
        this.streams.size === 0
          ? this.pumpThrough(target)
          : setImmediate(() => {
              try {
                this.pumpThrough(target)
              } catch (error) {
                this.onReadError(error)
              }
            }),
      () => {},
    )
  }

  /** Delivers the committed events after the hub's position, up to `target`. */
  private pumpThrough(target: number): void {
    if (this.stopped) return
    if (this.streams.size === 0) {
      // Nobody to tell: the position moves on without reading the events (a stream opened later
      // starts from it, as it would after a read). Each ADT message or write would otherwise read
      // back the events it just appended, for no one.
      const through = target === Number.MAX_SAFE_INTEGER ? this.log.head() : target
      if (through > this.cursor) this.cursor = through
      return
    }
    // Events pruned before they were read (only if retention were shorter than a pump): the live
    // streams cannot have them any more, so they are told to reload.
    const pruned = this.log.prunedThrough()
    if (this.cursor < pruned) {
      this.cursor = pruned
      for (const stream of this.streams) if (stream.live) stream.announce('reset', pruned)
    }
    for (;;) {
      const events = this.log.between(this.cursor, target, PAGE)
      for (const event of events) {
        const delivery = new FeedDelivery(event)
        for (const group of this.audienceOf(delivery))
          for (const stream of group) if (stream.live && stream.deliver(delivery)) this.counts.delivered++
        this.cursor = event.seq
      }
      if (events.length < PAGE) return
    }
  }

  /**
   * The groups of streams that may see the event: its facility's and those without a facility; a
   * notification for every facility, every group. The views decide the rest (feed/views.ts).
   */
  private audienceOf(delivery: FeedDelivery): Set<FeedStream>[] {
    if (delivery.forEveryFacility) return [...this.byFacility.values()]
    const unbound = delivery.audience === 'bound' ? undefined : this.byFacility.get(null)
    const own =
      delivery.facility === null || delivery.audience === 'unbound' ? undefined : this.byFacility.get(delivery.facility)
    return [own, unbound].filter((group): group is Set<FeedStream> => group !== undefined)
  }

  /** Whether one more stream of this token may open. */
  refusal(principal: Principal): OpenRefusal | null {
    if (this.streams.size >= this.limits.maxStreams) return 'too-many-streams'
    if ((this.perToken.get(principal.tokenId) ?? 0) >= this.limits.maxStreamsPerToken)
      return 'too-many-streams-for-token'
    return null
  }

  /**
   * Starts a stream: without a position it is live at once (`ready`); with one it first receives
   * every kept event after it, or `reset` when some of those are no longer kept (or the position is
   * not one of this database's: a restored backup, another server).
   */
  open(stream: FeedStream, lastEventId: number | null): void {
    this.streams.add(stream)
    const tokenId = stream.viewer.tokenId
    this.perToken.set(tokenId, (this.perToken.get(tokenId) ?? 0) + 1)
    const facility = stream.viewer.facility
    const group = this.byFacility.get(facility) ?? new Set<FeedStream>()
    group.add(stream)
    this.byFacility.set(facility, group)
    stream.onEnd((why) => {
      if (why === 'overflow') this.counts.cut++
      this.streams.delete(stream)
      group.delete(stream)
      if (group.size === 0 && this.byFacility.get(facility) === group) this.byFacility.delete(facility)
      const left = (this.perToken.get(tokenId) ?? 1) - 1
      if (left > 0) this.perToken.set(tokenId, left)
      else this.perToken.delete(tokenId)
    })
    this.pump()
    if (lastEventId === null) this.goLive(stream, 'ready')
    else if (lastEventId > this.cursor || lastEventId < this.log.prunedThrough()) this.goLive(stream, 'reset')
    else {
      stream.pos = lastEventId
      void this.catchUp(stream)
    }
  }

  private goLive(stream: FeedStream, announce: 'ready' | 'reset'): void {
    stream.announce(announce, this.cursor)
    stream.live = true
  }

  /**
   * Sends the kept events the stream missed, a page at a time, waiting while its buffer is full.
   * While it waits the hub reads on and the log grows, so each page is read up to the hub's
   * position *at that moment*, and the stream goes live only after a read that found nothing
   * left: with no wait between that read and going live, no event can fall between the two.
   */
  private async catchUp(stream: FeedStream): Promise<void> {
    while (!stream.ended) {
      // Pruned meanwhile (a very slow reader): what it missed is gone, so it must reload.
      if (stream.pos < this.log.prunedThrough()) {
        this.goLive(stream, 'reset')
        return
      }
      const events = this.log.between(stream.pos, this.cursor, PAGE)
      if (events.length === 0) {
        // Everything up to the hub's position is passed: from here the hub delivers.
        stream.pos = this.cursor
        stream.live = true
        return
      }
      for (const event of events) {
        // Sent as fast as the client reads, never faster: a catch-up of days fits any buffer.
        if (stream.congested) await stream.drained()
        if (stream.ended) return
        if (stream.deliver(new FeedDelivery(event))) this.counts.delivered++
      }
      // A long catch-up lets the event loop serve the others between pages.
      await new Promise((resolve) => setImmediate(resolve))
    }
  }

  /**
   * Ends the streams whose token is no longer valid (revoked, expired, or gone), or whose holder no
   * longer has the facility or role the stream was opened with (a provider account's latest token
   * names another facility): a stream never shows more than its holder may see now.
   */
  checkTokens(lookup: (tokenId: string) => TokenStanding | undefined, now = Date.now()): void {
    const standing = new Map<string, TokenStanding | null>()
    for (const stream of this.streams) {
      const id = stream.viewer.tokenId
      let info = standing.get(id)
      if (info === undefined) {
        const found = lookup(id)
        info = found !== undefined && tokenRefusal(found, now) === null ? found : null
        standing.set(id, info)
      }
      const same = info !== null && info.facility === stream.viewer.facility && info.role === stream.viewer.role
      if (!same) stream.end('token')
    }
  }

  /** Ends every stream (shutdown), each with a clean end of its response, and reads no more. */
  stop(): void {
    this.stopped = true
    for (const stream of [...this.streams]) stream.end('shutdown')
  }
}
