import fastJsonStringify from 'fast-json-stringify'
import type { FeedAudience, FeedEvent, FeedResource } from '../db/repositories/feed.js'
import {
  learnsOf,
  mayRead,
  type NotificationSnapshot,
  snapshotForViewer,
  type Viewer,
} from '../db/repositories/notification-audience.js'
import { BedStatus } from '../schemas/beds.js'
import { FormTemplate } from '../schemas/form-templates.js'
import { Notification } from '../schemas/notifications.js'
import { WardOccupant } from '../schemas/ward-occupants.js'

// The serializers of the records' response schemas, the ones GET /<resource>/:id answers with, so
// an event's data never holds a field that GET would not show.
const serialize: Record<FeedResource, (record: unknown) => string> = {
  'ward-occupants': fastJsonStringify(WardOccupant),
  'form-templates': fastJsonStringify(FormTemplate),
  notifications: fastJsonStringify(Notification),
  'bed-states': fastJsonStringify(BedStatus),
}

/** One SSE message. Ids and names never hold a line break; JSON text never holds a raw one. */
export function sseFrame(id: number, name: string, data: string): string {
  return `id: ${id}\nevent: ${name}\ndata: ${data}\n\n`
}

/**
 * An event of the log, ready to be shown to many viewers: the payload is parsed once, and each
 * distinct view of it is serialized and framed once, however many streams receive it.
 */
export class FeedDelivery {
  readonly seq: number
  readonly resource: FeedResource
  readonly facility: string | null
  readonly audience: FeedAudience
  private readonly event: FeedEvent
  private readonly name: string
  private shared: string | undefined
  private snapshot: NotificationSnapshot | undefined
  private readonly byView = new Map<string, string>()

  constructor(event: FeedEvent) {
    this.event = event
    this.seq = event.seq
    this.resource = event.resource
    this.facility = event.facility
    this.audience = event.audience
    this.name = `${event.resource} ${event.action}`
  }

  /** A notification without a facility that is not only for tokens without one: every facility's. */
  get forEveryFacility(): boolean {
    return this.resource === 'notifications' && this.facility === null && !this.notification().unboundOnly
  }

  private notification(): NotificationSnapshot {
    this.snapshot ??= JSON.parse(this.event.payload) as NotificationSnapshot
    return this.snapshot
  }

  /** The SSE message for this viewer, or null when the viewer may not read this change. */
  frameFor(viewer: Viewer): string | null {
    // The per-side events of a move: each for the bound tokens of one facility, or the unbound.
    if (this.audience === 'unbound' && viewer.facility !== null) return null
    if (this.audience === 'bound' && viewer.facility === null) return null
    if (this.resource === 'notifications') return this.notificationFrame(viewer)
    // A facility-bound token reads its facility's records only (not those without a facility).
    if (viewer.facility !== null && viewer.facility !== this.event.facility) return null
    this.shared ??= sseFrame(this.seq, this.name, serialize[this.resource](JSON.parse(this.event.payload)))
    return this.shared
  }

  private notificationFrame(viewer: Viewer): string | null {
    const snapshot = this.notification()
    if (!mayRead(viewer, snapshot)) return null
    // A mark seen is news only to those who may learn of that reader (docs/notifications.md).
    if (snapshot.reader && !learnsOf(viewer, snapshot.reader)) return null
    // What the view depends on: `to` for admins, the readers a facility may learn of, and the
    // viewer's own mark, which it always sees.
    // The key names each part unambiguously (JSON), so no facility or account name, however it is
    // spelled, makes two views one: the view first framed must never be another's.
    const ownMark = snapshot.marks.some((mark) => mark.account === viewer.account)
    const key = JSON.stringify([viewer.role === 'admin', viewer.facility, ownMark ? viewer.account : null])
    let frame = this.byView.get(key)
    if (frame === undefined) {
      frame = sseFrame(this.seq, this.name, serialize.notifications(snapshotForViewer(viewer, snapshot)))
      this.byView.set(key, frame)
    }
    return frame
  }
}
