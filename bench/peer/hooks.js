// The ward-occupants service's hooks, as a Feathers app writes them: plain functions of the hook
// context, registered per method in server.js.
import { randomUUID } from 'node:crypto'
import { BadRequest, Conflict, Forbidden, NotAuthenticated } from '@feathersjs/errors'
import { tokenHash } from './seed.js'

/**
 * Bearer token authentication: the token's SHA-256 looked up in the Map the server read from the
 * tokens table at start (so a token added or revoked while it runs is not seen: simpler, and
 * cheaper per request, than the service's check).
 */
export function authenticate(tokens) {
  return async (context) => {
    const header = context.params.headers?.authorization ?? ''
    const user = header.startsWith('Bearer ') ? tokens.get(tokenHash(header.slice(7))) : undefined
    if (!user) throw new NotAuthenticated('a valid bearer token is required')
    if (user.role === 'read' && !['find', 'get'].includes(context.method))
      throw new Forbidden('this token may only read')
    context.params.user = user
  }
}

/** A token bound to a facility sees only that facility: the query says so, so another facility's id is a 404. */
export async function restrictToFacility(context) {
  const { facility } = context.params.user
  if (facility !== null) context.params.query = { ...context.params.query, facility }
}

const NULLABLE = new Set(['facility', 'room', 'provider', 'dischargedAt', 'dischargedBy'])

/**
 * Query strings carry only strings: `dischargedAt=null` (or `dischargedAt=`, what the Feathers REST
 * client sends for null) becomes `dischargedAt: null`, which the knex adapter turns into IS NULL.
 */
export async function parseNulls(context) {
  const query = { ...context.params.query }
  for (const [key, value] of Object.entries(query)) {
    if (NULLABLE.has(key) && (value === 'null' || value === '')) query[key] = null
  }
  context.params.query = query
}

const CREATABLE = ['encounter', 'room', 'bed', 'provider', 'occupiedBy', 'occupiedAt']

/** The fields a client may send; the id, the facility and who and when are the server's. */
export async function setCreated(context) {
  const { user } = context.params
  const now = Date.now()
  const data = {}
  for (const key of CREATABLE) if (context.data[key] !== undefined) data[key] = context.data[key]
  context.data = {
    ...data,
    id: randomUUID(),
    facility: user.facility ?? context.data.facility ?? null,
    createdAt: now,
    createdBy: user.account,
    occupiedAt: data.occupiedAt ?? now,
  }
}

/** `{discharge: true}` sets dischargedAt/dischargedBy, on an active occupant only (else 404). */
export async function setDischarge(context) {
  const { discharge, provider } = context.data
  const data = {}
  if (provider !== undefined) data.provider = provider
  if (discharge === true) {
    Object.assign(data, { dischargedAt: Date.now(), dischargedBy: context.params.user.account })
    context.params.query = { ...context.params.query, dischargedAt: null }
  } else if (discharge === false) {
    Object.assign(data, { dischargedAt: null, dischargedBy: null })
  }
  if (Object.keys(data).length === 0) throw new BadRequest('nothing to change')
  context.data = data
}

/** A second active occupant for a bed breaks the partial unique index: a 409, not a 500. */
export async function bedConflict(context) {
  if (context.error?.message?.includes('ward_occupants_active_bed'))
    context.error = new Conflict(`bed ${context.data.bed} already has an active occupant`)
}
