import type { Test } from 'tap'
import { createNotificationRepository } from '../../db/repositories/notifications.js'
import type { Role } from '../../domain/principal.js'
import { snapshot } from '../fuzz/fuzz-helper.js'
import { bearer, buildTestApp, type TestApp } from '../helper.js'

/**
 * The data behind the isolation matrix: nine tokens (role × facility binding), records of every
 * resource in facility A, in facility B and in none, and the rule that says who may see what.
 * The tests generate their cases from these tables.
 */

export type Binding = 'A' | 'B' | null
export const ROLES: Role[] = ['read', 'write', 'admin']
export const BINDINGS: Binding[] = ['A', 'B', null]

export interface Caller {
  name: string
  role: Role
  facility: Binding
  account: string
  token: string
}

/**
 * Where a fixture record lives, and (notifications only) whom it is addressed to, and whether it
 * is the notification of a record without a facility (for callers without a facility only).
 */
export interface Target {
  name: string
  facility: Binding
  to?: string[]
  unboundOnly?: boolean
}

export type ResourceName = 'ward-occupants' | 'form-templates' | 'notifications'

export const TARGETS: Record<ResourceName, Target[]> = {
  'ward-occupants': [
    { name: 'A', facility: 'A' },
    { name: 'B', facility: 'B' },
    { name: 'none', facility: null },
  ],
  'form-templates': [
    { name: 'A', facility: 'A' },
    { name: 'B', facility: 'B' },
    { name: 'none', facility: null },
  ],
  notifications: [
    { name: 'A', facility: 'A' },
    { name: 'B', facility: 'B' },
    { name: 'every facility', facility: null },
    { name: 'A, to write-A', facility: 'A', to: ['write-A'] },
    { name: 'B, to write-B', facility: 'B', to: ['write-B'] },
    { name: 'every facility, to admin-any', facility: null, to: ['admin-any'] },
    { name: 'of a facility-less record', facility: null, unboundOnly: true },
  ],
}

const RANK: Record<Role, number> = { read: 0, write: 1, admin: 2 }

export function allows(caller: Caller, needed: Role): boolean {
  return RANK[caller.role] >= RANK[needed]
}

/**
 * The rule under test: bound tokens see their facility only (notifications: also every facility's,
 * but not those of a record without a facility).
 */
export function canSee(caller: Caller, resource: ResourceName, target: Target): boolean {
  const facilityOk =
    caller.facility === null ||
    target.facility === caller.facility ||
    (resource === 'notifications' && target.facility === null && target.unboundOnly !== true)
  return facilityOk && (target.to === undefined || target.to.includes(caller.account))
}

export function accountOf(role: Role, facility: Binding): string {
  return `${role}-${facility ?? 'any'}`
}

/** An app with the nine callers. Records are made by `makeRecord`, through an unbound admin. */
export async function buildMatrixApp(t: Test) {
  const { app } = await buildTestApp(t)
  const callers: Caller[] = []
  for (const role of ROLES) {
    for (const facility of BINDINGS) {
      const account = accountOf(role, facility)
      const { token } = app.tokens.create({ account, role, facility, label: `matrix ${account}` })
      callers.push({ name: `${role}/${facility ?? 'unbound'}`, role, facility, account, token })
    }
  }
  const root = callers.find((c) => c.role === 'admin' && c.facility === null) as Caller
  const byName = (role: Role, facility: Binding) =>
    callers.find((c) => c.role === role && c.facility === facility) as Caller
  return { app, callers, root, byName }
}

let serial = 0

/** A fresh record of `resource` for `target`; answers its id. */
export async function makeRecord(
  app: TestApp,
  root: Caller,
  resource: ResourceName | 'hl7',
  target: Target,
): Promise<string> {
  serial++
  if (resource === 'hl7') return parkedMessage(app, target.facility)
  const facility = target.facility === null ? {} : { facility: target.facility }
  if (resource === 'notifications') {
    const repo = createNotificationRepository(app.db)
    return repo.create({
      code: 'c',
      type: 'ward',
      title: `n${serial}`,
      body: 'b',
      facility: target.facility,
      to: target.to,
      unboundOnly: target.unboundOnly,
    }).id
  }
  const payload =
    resource === 'ward-occupants'
      ? { encounter: `enc-${serial}`, bed: `bed-${serial}`, occupiedBy: 'patient-1', room: 'R-1', ...facility }
      : { type: 'intake', name: `form ${serial}`, template: 'h1= name', tags: ['vitals'], ...facility }
  const res = await app.inject({ method: 'POST', url: `/${resource}`, headers: bearer(root.token), payload })
  if (res.statusCode !== 200) throw new Error(`could not make a ${resource} record: ${res.body}`)
  return (res.json() as { id: string }).id
}

/** A parked ADT message of `facility` in the message log (the routes under /hl7/messages/{id}). */
function parkedMessage(app: TestApp, facility: string | null): string {
  const id = `${serial.toString(16).padStart(24, '0')}`
  app.db
    .prepare(
      `INSERT INTO hl7_messages (id, sending_application, sending_facility, control_id, event, facility, received_at,
         status, ack_code, ack, error, park_code, raw)
       VALUES (?, 'HIS', 'GENERAL', ?, 'A03', ?, ?, 'parked', 'AA', 'MSA|AA', 'not admitted', 'not-admitted', 'MSH|')`,
    )
    .run(id, `c-${serial}`, facility, Date.now())
  return id
}

/** What a record looks like to a caller allowed to read it: body and ETag, byte for byte. */
export async function observe(app: TestApp, resource: ResourceName, id: string, viewer: Caller) {
  const res = await app.inject({ url: `/${resource}/${id}`, headers: bearer(viewer.token) })
  return `${res.statusCode} ${res.headers.etag ?? '-'} ${res.body}`
}

/** A caller that may read `target` (for the "unchanged" check): the read token of its facility. */
export function ownerOf(callers: Caller[], resource: ResourceName, target: Target): Caller {
  const owner = callers.find((c) => c.role === 'read' && canSee(c, resource, target))
  // Records addressed to one account are seen by that account only.
  return owner ?? (callers.find((c) => canSee(c, resource, target)) as Caller)
}

export { snapshot }
