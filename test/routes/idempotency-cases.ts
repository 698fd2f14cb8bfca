import type { Database } from 'better-sqlite3'
import { createNotificationRepository } from '../../db/repositories/notifications.js'
import { bearer, type TestApp } from '../helper.js'

/** Requests of one token, with an Idempotency-Key when one is given (and any other headers). */
export function caller(app: TestApp, token: string) {
  return (method: string, url: string, payload?: unknown, key?: string, headers: Record<string, string> = {}) =>
    app.inject({
      method: method as 'POST',
      url,
      headers: { ...bearer(token), ...headers, ...(key === undefined ? {} : { 'idempotency-key': key }) },
      ...(payload === undefined ? {} : { payload: payload as object }),
    })
}

/** What one write route needs for an Idempotency-Key test: a record to act on, the request. */
export interface WriteCase {
  name: string
  method: 'POST' | 'PATCH' | 'DELETE'
  /** Makes what the request acts on (through the app, without a key); returns its path. */
  prepare: (call: Call) => Promise<string>
  payload?: Record<string, unknown>
}

export type Call = (method: string, url: string, payload?: unknown) => Promise<{ status: number; body: string }>

async function occupant(call: Call): Promise<string> {
  const res = await call('POST', '/ward-occupants', { encounter: 'e-0', bed: 'B-0', occupiedBy: 'p' })
  return `/ward-occupants/${JSON.parse(res.body).id}`
}

async function template(call: Call): Promise<string> {
  const res = await call('POST', '/form-templates', { type: 'intake' })
  return `/form-templates/${JSON.parse(res.body).id}`
}

/** Every route that stores the answer to a request with an Idempotency-Key. */
export function writeCases(db: Database): WriteCase[] {
  return [
    {
      name: 'POST /ward-occupants',
      method: 'POST',
      prepare: async () => '/ward-occupants',
      payload: { encounter: 'e-1', bed: 'B-1', occupiedBy: 'p', room: 'R-1' },
    },
    { name: 'PATCH /ward-occupants/:id', method: 'PATCH', prepare: occupant, payload: { discharge: true } },
    { name: 'DELETE /ward-occupants/:id', method: 'DELETE', prepare: occupant },
    {
      name: 'POST /form-templates',
      method: 'POST',
      prepare: async () => '/form-templates',
      payload: { type: 'intake', name: 'Admission', tags: ['a', 'b'] },
    },
    { name: 'PATCH /form-templates/:id', method: 'PATCH', prepare: template, payload: { name: 'Renamed', hide: true } },
    { name: 'DELETE /form-templates/:id', method: 'DELETE', prepare: template },
    {
      name: 'POST /notifications/:id/seen',
      method: 'POST',
      prepare: async () => {
        const note = createNotificationRepository(db).create({
          facility: null,
          code: 'c',
          type: 't',
          title: 'T',
          body: 'B',
        })
        return `/notifications/${note.id}/seen`
      },
    },
  ]
}

/** What a change leaves in the file, counted with plain SQL: the oracle for "no second change". */
export function footprint(db: Database): Record<string, number> {
  const count = (table: string) => db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number
  return {
    audit: count('audit_log'),
    feed: count('feed_events'),
    occupants: count('ward_occupants'),
    templates: count('form_templates'),
    seen: count('notification_seen'),
    versions: db.prepare('SELECT coalesce(sum(version), 0) FROM ward_occupants').pluck().get() as number,
    templateVersions: db.prepare('SELECT coalesce(sum(version), 0) FROM form_templates').pluck().get() as number,
  }
}
