import type { Database } from 'better-sqlite3'
import { AlreadyDischargedError, BedOccupiedError, NotFoundError } from '../../domain/errors.js'
import type { Principal } from '../../domain/principal.js'
import { assertVersion, type IfMatch } from '../../domain/versions.js'
import type { ServiceEventBus, WardOccupantEvent } from '../../domain/ward-events.js'
import { newId } from '../../lib/ids.js'
import { WardOccupant, type WardOccupantCreate, type WardOccupantPatch } from '../../schemas/ward-occupants.js'
import { ACTIVE_BED_INDEX } from '../bed-policy.js'
import {
  createJsonLister,
  facilityCondition,
  type JsonField,
  jsonPageBytes,
  jsonRecord,
  type Scope,
} from '../query/list.js'
import { type FieldMap, parseListQuery } from '../query/query.js'
import { createReadMemo } from '../read-memo.js'
import type { WriteQueue } from '../write-queue.js'
import { type ChangeLogs, logChange } from './changes.js'

const RESOURCE = 'ward-occupants' as const

export const WARD_OCCUPANT_FIELDS: FieldMap = {
  id: { column: 'id', type: 'string' },
  createdAt: { column: 'created_at', type: 'number' },
  createdBy: { column: 'created_by', type: 'string' },
  facility: { column: 'facility', type: 'string' },
  encounter: { column: 'encounter', type: 'string' },
  room: { column: 'room', type: 'string' },
  bed: { column: 'bed', type: 'string' },
  provider: { column: 'provider', type: 'string' },
  occupiedAt: { column: 'occupied_at', type: 'number' },
  occupiedBy: { column: 'occupied_by', type: 'string' },
  dischargedAt: { column: 'discharged_at', type: 'number' },
  dischargedBy: { column: 'discharged_by', type: 'string' },
}

/** The record's fields in the response schema's order, as SQLite writes them to JSON (NULL ones left out). */
const JSON_FIELDS: JsonField[] = Object.keys(WardOccupant.properties).map((name) => ({
  name,
  column: (WARD_OCCUPANT_FIELDS[name] as { column: string }).column,
  optional: !(WardOccupant.required as string[] | undefined)?.includes(name),
}))

export interface WardOccupantRow {
  id: string
  version: number
  created_at: number
  created_by: string
  facility: string | null
  encounter: string
  room: string | null
  bed: string
  provider: string | null
  occupied_at: number
  occupied_by: string
  discharged_at: number | null
  discharged_by: string | null
}

export interface Versioned<T> {
  record: T
  version: number
}

export function toRecord(row: WardOccupantRow): WardOccupant {
  const record: WardOccupant = {
    id: row.id,
    createdAt: row.created_at,
    createdBy: row.created_by,
    encounter: row.encounter,
    bed: row.bed,
    occupiedAt: row.occupied_at,
    occupiedBy: row.occupied_by,
  }
  if (row.facility !== null) record.facility = row.facility
  if (row.room !== null) record.room = row.room
  if (row.provider !== null) record.provider = row.provider
  if (row.discharged_at !== null) record.dischargedAt = row.discharged_at
  if (row.discharged_by !== null) record.dischargedBy = row.discharged_by
  return record
}

function isActiveBedConflict(error: unknown): boolean {
  const e = error as { code?: string; message?: string }
  return e.code === 'SQLITE_CONSTRAINT_UNIQUE' && (e.message ?? '').includes(ACTIVE_BED_INDEX)
}

export interface WardOccupantRepositoryOptions extends ChangeLogs {
  events: ServiceEventBus
  writes: WriteQueue
  /** Memory for list pages asked again before anything changed (0: none). */
  pageCacheBytes?: number
  /** Refuses an API admission into a bed that is not available (BED_NOT_AVAILABLE); the ADT feed's are not refused. */
  admissible?: (facility: string | null, bed: string) => void
}

export function createWardOccupantRepository(db: Database, opts: WardOccupantRepositoryOptions) {
  // Parameters by position, in the hot writes: binding by name looks each one up in an object,
  // some 0.15 µs a parameter.
  const insertRow = db.prepare(
    `INSERT INTO ward_occupants (id, version, created_at, created_by, facility, encounter, room, bed, provider,
       occupied_at, occupied_by, discharged_at, discharged_by)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  const insert = (r: WardOccupantRow) =>
    insertRow.run(
      r.id,
      r.version,
      r.created_at,
      r.created_by,
      r.facility,
      r.encounter,
      r.room,
      r.bed,
      r.provider,
      r.occupied_at,
      r.occupied_by,
      r.discharged_at,
      r.discharged_by,
    )
  const byId = db.prepare<[string], WardOccupantRow>('SELECT * FROM ward_occupants WHERE id = ?')
  const activeOnBed = db.prepare<[string | null, string], { id: string }>(
    `SELECT id FROM ward_occupants WHERE facility IS ? AND bed = ? AND discharged_at IS NULL LIMIT 1`,
  )
  const updateRow = db.prepare(
    `UPDATE ward_occupants SET provider = ?, discharged_at = ?, discharged_by = ?, version = version + 1 WHERE id = ?`,
  )
  const remove = db.prepare('DELETE FROM ward_occupants WHERE id = ?')
  const relabelRow = db.prepare(
    `UPDATE ward_occupants SET occupied_by = :occupied_by, encounter = :encounter, version = version + 1 WHERE id = :id`,
  )
  // Reads answer JSON written by SQLite, sent as it is (see createJsonLister).
  const json = jsonRecord(JSON_FIELDS)
  const byIdJson = db
    .prepare<[string], [string | null, number, string]>(
      `SELECT r.facility, r.version, ${json.sql} FROM ward_occupants r WHERE r.id = ?`,
    )
    .raw()
  // A bed board or a tablet polls the same lists: pages are remembered until the database changes.
  const pages = createReadMemo(db, opts.pageCacheBytes ?? 0, jsonPageBytes)
  const list = createJsonLister(db, 'ward_occupants', JSON_FIELDS, pages)

  /** The row if it exists and the caller's facility may see it; otherwise 404, revealing nothing. */
  function visibleRow(scope: Scope, id: string): WardOccupantRow {
    const row = byId.get(id)
    if (!row || (scope.facility !== null && row.facility !== scope.facility))
      throw new NotFoundError('ward occupant', id)
    return row
  }

  function emit(type: WardOccupantEvent['type'], record: WardOccupant, actor: Principal, at: number) {
    opts.events.emit('ward-occupant', { type, occupant: record, actor, at })
  }

  /** Runs a write that may hit the active-bed index, turning the conflict into BED_OCCUPIED. */
  function guardBed<T>(facility: string | null, bed: string, write: () => T): T {
    try {
      return write()
    } catch (error) {
      if (!isActiveBedConflict(error)) throw error
      const active = activeOnBed.get(facility, bed)
      throw new BedOccupiedError(bed, active?.id ?? 'unknown')
    }
  }

  // The writes run through the connection's write queue (group commit, see write-queue.ts): each
  // one stays atomic, and its promise settles once its batch is durable.
  const { writes } = opts

  function create(actor: Principal, facility: string | null, input: WardOccupantCreate): Versioned<WardOccupant> {
    const now = Date.now()
    const id = newId(now)
    // The row as stored: every column is written, so the record needs no second read.
    const row: WardOccupantRow = {
      id,
      version: 1,
      created_at: input.createdAt ?? now,
      created_by: actor.account,
      facility,
      encounter: input.encounter,
      room: input.room ?? null,
      bed: input.bed,
      provider: input.provider ?? null,
      occupied_at: input.occupiedAt ?? now,
      occupied_by: input.occupiedBy,
      discharged_at: null,
      discharged_by: null,
    }
    guardBed(facility, input.bed, () => insert(row))
    const record = toRecord(row)
    logChange(
      opts,
      actor,
      { resource: RESOURCE, recordId: id, facility, operation: 'create', before: null, after: record },
      now,
    )
    emit('occupied', record, actor, now)
    return { record, version: row.version }
  }

  /** `dischargeAt`: when the patient left, if not now (an ADT message's event time). */
  function patch(
    actor: Principal,
    id: string,
    changes: WardOccupantPatch,
    ifMatch: IfMatch,
    dischargeAt?: number,
  ): Versioned<WardOccupant> {
    const row = visibleRow(actor, id)
    assertVersion(ifMatch, 'ward occupant', id, row.version)
    if (changes.discharge === true && row.discharged_at !== null) throw new AlreadyDischargedError(id)
    const now = Date.now()
    const next = {
      id,
      provider: changes.provider ?? row.provider,
      dischargedAt: row.discharged_at,
      dischargedBy: row.discharged_by,
    }
    let event: WardOccupantEvent['type'] | null = null
    if (changes.discharge === true) {
      Object.assign(next, { dischargedAt: dischargeAt ?? now, dischargedBy: actor.account })
      event = 'discharged'
    } else if (changes.discharge === false && row.discharged_at !== null) {
      Object.assign(next, { dischargedAt: null, dischargedBy: null })
      event = 'reopened'
    }
    const unchanged =
      next.provider === row.provider &&
      next.dischargedAt === row.discharged_at &&
      next.dischargedBy === row.discharged_by
    if (unchanged) return { record: toRecord(row), version: row.version }

    guardBed(row.facility, row.bed, () => updateRow.run(next.provider, next.dischargedAt, next.dischargedBy, id))
    // What the UPDATE wrote, inside the same transaction: no second read needed.
    const updated: WardOccupantRow = {
      ...row,
      version: row.version + 1,
      provider: next.provider,
      discharged_at: next.dischargedAt,
      discharged_by: next.dischargedBy,
    }
    const before = toRecord(row)
    const record = toRecord(updated)
    logChange(
      opts,
      actor,
      { resource: RESOURCE, recordId: id, facility: row.facility, operation: 'patch', before, after: record },
      now,
    )
    if (event) emit(event, record, actor, now)
    return { record, version: updated.version }
  }

  function destroy(actor: Principal, id: string, ifMatch: IfMatch): WardOccupant {
    const row = visibleRow(actor, id)
    assertVersion(ifMatch, 'ward occupant', id, row.version)
    remove.run(id)
    const record = toRecord(row)
    logChange(
      opts,
      actor,
      { resource: RESOURCE, recordId: id, facility: row.facility, operation: 'delete', before: record, after: null },
      Date.now(),
    )
    return record
  }

  /**
   * The stay's patient or encounter, renamed (an ADT merge or new visit number: the API never
   * changes them). Audited and fed as a patch; the board shows it, no notification is due.
   */
  function relabel(actor: Principal, id: string, to: { occupiedBy?: string; encounter?: string }): void {
    const row = visibleRow(actor, id)
    const updated: WardOccupantRow = {
      ...row,
      version: row.version + 1,
      occupied_by: to.occupiedBy ?? row.occupied_by,
      encounter: to.encounter ?? row.encounter,
    }
    if (updated.occupied_by === row.occupied_by && updated.encounter === row.encounter) return
    relabelRow.run(updated)
    const change = { resource: RESOURCE, recordId: id, facility: row.facility, operation: 'patch' } as const
    logChange(opts, actor, { ...change, before: toRecord(row), after: toRecord(updated) }, Date.now())
  }

  return {
    /** The writes themselves, for a caller already inside a write-queue job (the ADT feed, db/repositories/adt-ward.ts). */
    inTransaction: { create, patch, remove: destroy, relabel },
    create: (actor: Principal, facility: string | null, input: WardOccupantCreate): Promise<Versioned<WardOccupant>> =>
      writes.run(() => {
        opts.admissible?.(facility, input.bed)
        return create(actor, facility, input)
      }),
    /** The record as JSON text, if the caller's facility may see it (else 404). */
    get(scope: Scope, id: string): Versioned<string> {
      const found = byIdJson.get(id)
      if (!found || (scope.facility !== null && found[0] !== scope.facility))
        throw new NotFoundError('ward occupant', id)
      return { record: json.clean(found[2]), version: found[1] }
    },
    list: (scope: Scope, query: Record<string, unknown>) =>
      list(facilityCondition(scope), parseListQuery(query, WARD_OCCUPANT_FIELDS)),
    patch: (
      actor: Principal,
      id: string,
      changes: WardOccupantPatch,
      ifMatch: IfMatch,
    ): Promise<Versioned<WardOccupant>> =>
      writes.run(() => {
        // A re-opened stay puts its patient back in the bed: an admission's check (the ADT feed's
        // A13 goes through inTransaction, applied anyway).
        if (changes.discharge === false) {
          const row = visibleRow(actor, id)
          if (row.discharged_at !== null) opts.admissible?.(row.facility, row.bed)
        }
        return patch(actor, id, changes, ifMatch)
      }),
    remove: (actor: Principal, id: string, ifMatch: IfMatch): Promise<WardOccupant> =>
      writes.run(() => destroy(actor, id, ifMatch)),
  }
}

export type WardOccupantRepository = ReturnType<typeof createWardOccupantRepository>
