import type { Principal } from '../../domain/principal.js'
import type { AuditChange, AuditLog } from './audit.js'
import { changeEvent, type FeedLog } from './feed.js'

export interface ChangeLogs {
  audit: AuditLog
  feed: FeedLog
}

/**
 * Where a repository records a change it just made, inside the change's own transaction: the
 * audit entry (who, before, after) and the live feed's event, both from the one change and with
 * one timestamp, so they commit or roll back with it and never disagree.
 */
export function logChange(logs: ChangeLogs, actor: Principal, change: AuditChange, at: number): void {
  logs.audit.append(actor, change, at)
  logs.feed.append(changeEvent(change), at)
}
