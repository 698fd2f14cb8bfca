import createError from '@fastify/error'
import type { Database } from 'better-sqlite3'
import type { ServiceEventBus, WardOccupantEvent } from '../plugins/events.js'
import type { WardOccupant, WardOccupantCreate, WardOccupantPatch } from '../routes/ward-occupants/schema.js'
import type { AuditLog } from './audit.js'
import { ACTIVE_BED_INDEX } from './bed-policy.js'
import { NotFoundError } from './errors.js'
import { newId } from './ids.js'
import { createLister, facilityCondition, type Scope } from './list.js'
import { type FieldMap, parseListQuery } from './query.js'
import type { Principal } from './tokens.js'
import { assertVersion, type IfMatch } from './versions.js'

export const BedOccupiedError = createError('BED_OCCUPIED', 'bed %s is occupied by ward occupant %s', 409)
export const AlreadyDischargedError = createError('ALREADY_DISCHARGED', 'ward occupant %s was already discharged', 409)

const RESOURCE = 'ward-occupants'

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

interface Row {
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

function toRecord(row: Row): WardOccupant {
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

export interface WardOccupantRepositoryOptions {
  audit: AuditLog
  events: ServiceEventBus
}

export function createWardOccupantRepository(db: Database, opts: WardOccupantRepositoryOptions) {
  const insert = db.prepare(
    `INSERT INTO ward_occupants (id, created_at, created_by, facility, encounter, room, bed, provider, occupied_at, occupied_by)
     VALUES (:id, :createdAt, :createdBy, :facility, :encounter, :room, :bed, :provider, :occupiedAt, :occupiedBy)`,
  )
  const byId = db.prepare<[string], Row>('SELECT * FROM ward_occupants WHERE id = ?')
  const activeOnBed = db.prepare<[string | null, string], { id: string }>(
    `SELECT id FROM ward_occupants WHERE facility IS ? AND bed = ? AND discharged_at IS NULL LIMIT 1`,
  )
  const update = db.prepare(
    `UPDATE ward_occupants SET provider = :provider, discharged_at = :dischargedAt, discharged_by = :dischargedBy,
     version = version + 1 WHERE id = :id`,
  )
  const remove = db.prepare('DELETE FROM ward_occupants WHERE id = ?')
  const list = createLister<Row, WardOccupant>(db, 'ward_occupants', toRecord)

  /** The row if it exists and the caller's facility may see it; otherwise 404, revealing nothing. */
  function visibleRow(scope: Scope, id: string): Row {
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

  const create = db.transaction((actor: Principal, facility: string | null, input: WardOccupantCreate) => {
    const now = Date.now()
    const id = newId(now)
    guardBed(facility, input.bed, () =>
      insert.run({
        id,
        createdAt: input.createdAt ?? now,
        createdBy: actor.account,
        facility,
        encounter: input.encounter,
        room: input.room ?? null,
        bed: input.bed,
        provider: input.provider ?? null,
        occupiedAt: input.occupiedAt ?? now,
        occupiedBy: input.occupiedBy,
      }),
    )
    const row = byId.get(id) as Row
    const record = toRecord(row)
    opts.audit.append(
      actor,
      { resource: RESOURCE, recordId: id, facility, operation: 'create', before: null, after: record },
      now,
    )
    emit('occupied', record, actor, now)
    return { record, version: row.version }
  })

  const patch = db.transaction((actor: Principal, id: string, changes: WardOccupantPatch, ifMatch: IfMatch) => {
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
      Object.assign(next, { dischargedAt: now, dischargedBy: actor.account })
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

    guardBed(row.facility, row.bed, () => update.run(next))
    const updated = byId.get(id) as Row
    const before = toRecord(row)
    const record = toRecord(updated)
    opts.audit.append(
      actor,
      { resource: RESOURCE, recordId: id, facility: row.facility, operation: 'patch', before, after: record },
      now,
    )
    if (event) emit(event, record, actor, now)
    return { record, version: updated.version }
  })

  const destroy = db.transaction((actor: Principal, id: string, ifMatch: IfMatch) => {
    const row = visibleRow(actor, id)
    assertVersion(ifMatch, 'ward occupant', id, row.version)
    remove.run(id)
    const record = toRecord(row)
    opts.audit.append(actor, {
      resource: RESOURCE,
      recordId: id,
      facility: row.facility,
      operation: 'delete',
      before: record,
      after: null,
    })
    return record
  })

  return {
    create: (actor: Principal, facility: string | null, input: WardOccupantCreate): Versioned<WardOccupant> =>
      create.immediate(actor, facility, input),
    get(scope: Scope, id: string): Versioned<WardOccupant> {
      const row = visibleRow(scope, id)
      return { record: toRecord(row), version: row.version }
    },
    list: (scope: Scope, query: Record<string, unknown>) =>
      list(facilityCondition(scope), parseListQuery(query, WARD_OCCUPANT_FIELDS)),
    patch: (actor: Principal, id: string, changes: WardOccupantPatch, ifMatch: IfMatch): Versioned<WardOccupant> =>
      patch.immediate(actor, id, changes, ifMatch),
    remove: (actor: Principal, id: string, ifMatch: IfMatch): WardOccupant => destroy.immediate(actor, id, ifMatch),
  }
}

export type WardOccupantRepository = ReturnType<typeof createWardOccupantRepository>
