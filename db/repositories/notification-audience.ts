/**
 * Who sees which notifications, and how much of them: the audience of a viewer as SQL (its
 * facility's, every facility's, its own), the fields it may filter on, and the record as it may
 * see it. The repository (notifications.ts) applies these to every list, get and mark.
 */

import type { Principal } from '../../domain/principal.js'
import type { Notification } from '../../schemas/notifications.js'
import type { BranchedCondition } from '../query/list.js'
import { type Condition, type FieldMap, InvalidQueryError } from '../query/query.js'

/** Who is reading: the account notifications are addressed to, its facility (null: all) and role. */
export type Viewer = Pick<Principal, 'account' | 'facility' | 'role'>

export const NOTIFICATION_FIELDS: FieldMap = {
  id: { column: 'id', type: 'string' },
  createdAt: { column: 'created_at', type: 'number' },
  code: { column: 'code', type: 'string' },
  type: { column: 'type', type: 'string' },
  title: { column: 'title', type: 'string' },
  body: { column: 'body', type: 'string' },
  direction: { column: 'direction', type: 'string' },
  facility: { column: 'facility', type: 'string' },
  meta: { column: 'meta', type: 'string', selectOnly: true },
  seenBy: {
    column: 'seen_by',
    type: 'string',
    array: { table: 'notification_seen', key: 'notification_id', value: 'account' },
  },
}

/**
 * The fields as a viewer may filter on them. For a facility-bound viewer `seenBy` counts only the
 * marks it may learn of (made with a token of its facility, or its own), the ones readersFor in
 * notifications.ts shows; the filter's subquery still searches notification_seen_account.
 * (`seenBy=null` and `seenBy[$exists]` are about the record's own column, which is never NULL, so
 * they reveal nothing.)
 */
function boundFields(viewer: Viewer & { facility: string }): FieldMap {
  return {
    ...NOTIFICATION_FIELDS,
    seenBy: {
      column: 'seen_by',
      type: 'string',
      array: {
        table: 'notification_seen',
        key: 'notification_id',
        value: 'account',
        scope: { sql: '(facility = ? OR account = ?)', params: [viewer.facility, viewer.account] },
      },
    },
  }
}

// Only administrators see (and so may filter by) the addressees of a notification.
const TO: FieldMap = {
  to: {
    column: 'recipients',
    type: 'string',
    array: { table: 'notification_recipients', key: 'notification_id', value: 'account' },
  },
}

export function fieldsFor(viewer: Viewer): FieldMap {
  const fields = viewer.facility === null ? NOTIFICATION_FIELDS : boundFields({ ...viewer, facility: viewer.facility })
  return viewer.role === 'admin' ? { ...fields, ...TO } : fields
}

/**
 * The record as the viewer may see it: `to` for admins only, and `seenBy` reduced to the readers it
 * may learn of (`readers`: by notification id; absent for a viewer without a facility, who sees all).
 */
export function forViewer<T extends Partial<Notification>>(
  viewer: Viewer,
  record: T,
  readers?: ReadonlyMap<string, ReadonlySet<string>>,
): T {
  let out = record
  if (readers && out.seenBy && out.seenBy.length > 0) {
    const visible = readers.get(record.id as string)
    out = { ...out, seenBy: out.seenBy.filter((account) => visible?.has(account) === true) }
  }
  if (viewer.role === 'admin' || out.to === undefined) return out
  const { to: _hidden, ...rest } = out
  return rest as T
}

const ADDRESSED_TO = 'r.id IN (SELECT notification_id FROM notification_recipients WHERE account = ?)'
const UNSEEN_BY = 'NOT r.id IN (SELECT notification_id FROM notification_seen WHERE account = ?)'

/**
 * What a viewer may see: its facility's notifications and those of every facility, addressed to
 * everyone or to its account; a viewer without a facility also sees the notifications of records
 * without one (unbound_only), which facility-bound viewers never do. The branches are disjoint
 * (broadcast or not) and each is an index search: notifications_audience in created_at order
 * (unbound_only = 0 is an equality on it, true anyway of a facility's notifications), or the
 * recipients' primary key then the row by id. The unary + keeps the checks on the row out of index
 * choice, so SQLite never answers the last branch by walking the audience or facility index
 * instead. The lister pages through the branches separately (see BranchedCondition in list.ts).
 */
export function audienceCondition(viewer: Viewer): BranchedCondition {
  const branches: Condition[] =
    viewer.facility === null
      ? [
          { sql: 'r.broadcast = 1', params: [] },
          { sql: `${ADDRESSED_TO} AND +r.broadcast = 0`, params: [viewer.account] },
        ]
      : [
          { sql: 'r.broadcast = 1 AND r.unbound_only = 0 AND r.facility = ?', params: [viewer.facility] },
          { sql: 'r.broadcast = 1 AND r.unbound_only = 0 AND r.facility IS NULL', params: [] },
          {
            sql: `${ADDRESSED_TO} AND +r.broadcast = 0 AND +r.unbound_only = 0 AND (+r.facility = ? OR +r.facility IS NULL)`,
            params: [viewer.account, viewer.facility],
          },
        ]
  return { ...or(branches), branches }
}

function or(parts: Condition[]): Condition {
  return { sql: parts.map((p) => `(${p.sql})`).join(' OR '), params: parts.flatMap((p) => p.params) }
}

function and(...parts: Condition[]): Condition {
  return { sql: parts.map((p) => `(${p.sql})`).join(' AND '), params: parts.flatMap((p) => p.params) }
}

/** Each branch of the audience, narrowed by the same further condition. */
export function narrowed(audience: BranchedCondition, condition: Condition): BranchedCondition {
  return { ...and(audience, condition), branches: audience.branches?.map((branch) => and(branch, condition)) }
}

export function seenCondition(viewer: Viewer, unseen: unknown): Condition | null {
  if (unseen === undefined) return null
  if (unseen !== 'true' && unseen !== 'false') throw new InvalidQueryError('$unseen must be true or false')
  return { sql: unseen === 'true' ? UNSEEN_BY : `NOT (${UNSEEN_BY})`, params: [viewer.account] }
}

/** Who marked a notification seen: the account and the facility of the token it used (null: none). */
export interface Mark {
  account: string
  facility: string | null
}

/**
 * A notification as of one change, with what decides who may read it: the live feed keeps this
 * in its log, so each stream is shown the record as the viewer would have read it at that moment.
 */
export interface NotificationSnapshot {
  record: Notification
  broadcast: boolean
  unboundOnly: boolean
  marks: Mark[]
  /** On a mark seen: who marked. */
  reader?: Mark
}

/** The rule audienceCondition states in SQL, for one notification in memory. */
export function mayRead(viewer: Viewer, snapshot: NotificationSnapshot): boolean {
  const { record } = snapshot
  const facilityOk =
    viewer.facility === null ||
    record.facility === viewer.facility ||
    (record.facility === undefined && !snapshot.unboundOnly)
  return facilityOk && (snapshot.broadcast || (record.to ?? []).includes(viewer.account))
}

/** Whether the viewer may learn of this reader (the marks readersFor in notifications.ts shows). */
export function learnsOf(viewer: Viewer, mark: Mark): boolean {
  return viewer.facility === null || mark.facility === viewer.facility || mark.account === viewer.account
}

/** The snapshot's record as the viewer may see it, like GET /notifications/:id at that moment. */
export function snapshotForViewer(viewer: Viewer, snapshot: NotificationSnapshot): Notification {
  if (viewer.facility === null) return forViewer(viewer, snapshot.record)
  const readers = new Set(snapshot.marks.filter((mark) => learnsOf(viewer, mark)).map((mark) => mark.account))
  return forViewer(viewer, snapshot.record, new Map([[snapshot.record.id, readers]]))
}
