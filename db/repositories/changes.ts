import type { Principal } from '../../domain/principal.js'
import type { AuditLog } from './audit.js'
import { changeEvents, type FeedLog, type RecordChange, recordTexts } from './feed.js'

export interface ChangeLogs {
  audit: AuditLog
  feed: FeedLog
}

/**
 * Where a repository records a change it just made, inside the change's own transaction: the
 * audit entry (who, before, after) and the live feed's events, all from the one change and with
 * one timestamp, so they commit or roll back with it and never disagree. A change that moves the
 * record to another facility is one entry and one event per side (changeEvents), for any record.
 */
export function logChange(logs: ChangeLogs, actor: Principal, change: RecordChange, at: number): void {
  // The record's JSON is written once and stored in both logs.
  const texts = recordTexts(change)
  logs.audit.append(actor, change, at, texts)
  for (const event of changeEvents(change, texts)) logs.feed.append(event, at)
}
