import fc from 'fast-check'
import { createNotificationRepository } from '../../db/repositories/notifications.js'
import { bearer, type TestApp } from '../helper.js'
import type { Binding, Caller, ResourceName } from './isolation-helper.js'

/**
 * The changes the feed's isolation property draws, and its oracle: what GET /<resource>/:id shows
 * each caller just before and just after each change. What a caller's stream (and catch-up, and
 * for admins the audit) must say of a change follows from those two answers alone, never from the
 * service's own rules: nothing → something is `created`, something → something else `patched`,
 * something → nothing `removed` (with what it showed last), no difference no event.
 */

export type Change =
  | { kind: 'make'; resource: 'ward-occupants' | 'form-templates'; facility: Binding }
  | { kind: 'notify'; facility: Binding; to: number[] | null; unboundOnly: boolean }
  | { kind: 'discharge' | 'drop-occupant' | 'drop-template'; pick: number }
  | { kind: 'rename'; pick: number; name: string }
  | { kind: 'move'; pick: number; to: 'A' | 'B' }
  | { kind: 'seen'; pick: number; by: number }

const facility = fc.constantFrom<Binding>('A', 'B', null)
// Several addressees, some of them bound to another facility than the notification's.
const addressees = fc.option(fc.uniqueArray(fc.nat({ max: 8 }), { minLength: 1, maxLength: 4 }), { nil: null })
const notify = (where: fc.Arbitrary<Binding>) =>
  fc.record({ kind: fc.constant('notify' as const), facility: where, to: addressees, unboundOnly: fc.boolean() })

const change: fc.Arbitrary<Change> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('make' as const),
      resource: fc.constantFrom('ward-occupants', 'form-templates'),
      facility,
    }),
  },
  { weight: 2, arbitrary: notify(fc.constantFrom<Binding>('A', 'B', null, null)) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constantFrom('discharge' as const, 'drop-occupant' as const, 'drop-template' as const),
      pick: fc.nat(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('rename' as const),
      pick: fc.nat(),
      name: fc.constantFrom('x', 'y', 'z'),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('move' as const),
      pick: fc.nat(),
      to: fc.constantFrom('A' as const, 'B' as const),
    }),
  },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('seen' as const), pick: fc.nat(), by: fc.nat() }) },
)

/**
 * A round's changes. It starts with two notifications for every facility, the ones that readers of
 * different facilities share, so marks seen by one facility's readers meet the other's views.
 */
export const changes: fc.Arbitrary<Change[]> = fc
  .tuple(notify(fc.constant(null)), notify(fc.constant(null)), fc.array(change, { minLength: 8, maxLength: 25 }))
  .map(([first, second, rest]) => [{ ...first, unboundOnly: false }, { ...second, unboundOnly: false }, ...rest])

let serial = 0

export interface Told {
  event: string
  data: unknown
}

interface Touched {
  resource: ResourceName
  id: string
  operation: 'create' | 'patch' | 'delete' | null
}

/** A GET as one caller: the body when it may read the record, else null (404). */
async function look(app: TestApp, caller: Caller, resource: ResourceName, id: string): Promise<unknown> {
  const res = await app.inject({ url: `/${resource}/${id}`, headers: bearer(caller.token) })
  if (res.statusCode === 404) return null
  if (res.statusCode !== 200) throw new Error(`GET /${resource}/${id} as ${caller.name}: ${res.statusCode}`)
  return res.json()
}

/** The world one run builds: its records, and what each caller must have been told. */
export function createWorld(app: TestApp, callers: Caller[], root: Caller) {
  const live: { resource: ResourceName; id: string }[] = []
  const events = new Map<Caller, Told[]>(callers.map((c) => [c, []]))
  const audits = new Map<Caller, unknown[]>(callers.map((c) => [c, []]))
  const recordIds = new Set<string>()
  const notifications = createNotificationRepository(app.db)
  const lastNotification = app.db.prepare<[], number | null>('SELECT max(rowid) FROM notifications').pluck()
  const notificationsAfter = app.db
    .prepare<[number], string>('SELECT id FROM notifications WHERE rowid > ? ORDER BY rowid')
    .pluck()
  const pick = (resource: ResourceName, n: number) => {
    const of = live.filter((r) => r.resource === resource)
    return of.length === 0 ? undefined : of[n % of.length]
  }

  async function write(method: 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) {
    const res = await app.inject({ method, url, headers: bearer(root.token), ...(payload ? { payload } : {}) })
    if (res.statusCode !== 200 && res.statusCode !== 409) throw new Error(`${method} ${url}: ${res.body}`)
    return res
  }

  type Plan = { target?: Touched; act: () => Promise<string | null> }
  const done = (run: () => Promise<unknown>) => async () => {
    await run()
    return null
  }

  function planMake(c: Extract<Change, { kind: 'make' }>): Plan {
    serial++
    const body =
      c.resource === 'ward-occupants' ? { encounter: 'e', bed: `b${serial}`, occupiedBy: 'p' } : { type: 't' }
    const where = c.facility ? { facility: c.facility } : {}
    return { act: async () => (await write('POST', `/${c.resource}`, { ...body, ...where })).json().id }
  }

  function planNotify(c: Extract<Change, { kind: 'notify' }>): Plan {
    const to = c.to?.map((i) => callers[i % callers.length]?.account as string)
    const input = { code: 'c', type: 't', title: 'n', body: 'b', facility: c.facility, to }
    return { act: async () => notifications.create({ ...input, unboundOnly: c.unboundOnly && c.facility === null }).id }
  }

  /** Marked seen by one of the callers who may read it (drawn among them). */
  async function planSeen(c: Extract<Change, { kind: 'seen' }>): Promise<Plan | null> {
    const n = pick('notifications', c.pick)
    if (!n) return null
    const readers: Caller[] = []
    for (const caller of callers) if ((await look(app, caller, n.resource, n.id)) !== null) readers.push(caller)
    const reader = readers[c.by % Math.max(1, readers.length)]
    if (!reader) return null
    const url = `/notifications/${n.id}/seen`
    const mark = async () => {
      const res = await app.inject({ method: 'POST', url, headers: bearer(reader.token) })
      if (res.statusCode !== 200) throw new Error(`mark seen: ${res.body}`)
    }
    return { target: { ...n, operation: null }, act: done(mark) }
  }

  /** A patch or a delete of a record the run made, by the admin without a facility. */
  function planChange(c: Extract<Change, { pick: number }>): Plan | null {
    const resource = c.kind === 'discharge' || c.kind === 'drop-occupant' ? 'ward-occupants' : 'form-templates'
    const r = pick(resource, c.pick)
    if (!r) return null
    const url = `/${resource}/${r.id}`
    if (c.kind === 'drop-occupant' || c.kind === 'drop-template')
      return { target: { ...r, operation: 'delete' }, act: done(() => write('DELETE', url)) }
    const payload =
      c.kind === 'rename' ? { name: c.name } : c.kind === 'move' ? { facility: c.to } : { discharge: true }
    return { target: { ...r, operation: 'patch' }, act: done(() => write('PATCH', url, payload)) }
  }

  /** What one change will do, and to which existing record (null: nothing to do). */
  async function plan(c: Change): Promise<Plan | null> {
    if (c.kind === 'make') return planMake(c)
    if (c.kind === 'notify') return planNotify(c)
    if (c.kind === 'seen') return planSeen(c)
    return planChange(c)
  }

  /** Applies a change, asking every caller before and after, and notes what each must be told. */
  async function apply(c: Change): Promise<void> {
    const planned = await plan(c)
    if (!planned) return
    const before = new Map<Caller, unknown>()
    const { target } = planned
    if (target) for (const caller of callers) before.set(caller, await look(app, caller, target.resource, target.id))
    const since = lastNotification.get() ?? 0
    const made = await planned.act()
    const touched: Touched[] = target ? [target] : []
    if (made) {
      const resource = c.kind === 'notify' ? 'notifications' : (c as { resource: ResourceName }).resource
      touched.push({ resource, id: made, operation: resource === 'notifications' ? null : 'create' })
    }
    // What the change produced: the notifications of a ward occupant's admission or discharge.
    for (const id of notificationsAfter.all(since))
      if (id !== made) touched.push({ resource: 'notifications', id, operation: null })
    for (const t of touched) {
      recordIds.add(t.id)
      const at = live.findIndex((r) => r.id === t.id)
      if (at === -1 && t.operation !== 'delete') live.push(t)
      if (at !== -1 && t.operation === 'delete') live.splice(at, 1)
      for (const caller of callers) {
        const was = t === target ? before.get(caller) : null
        const now = await look(app, caller, t.resource, t.id)
        const told = tell(t.resource, was, now)
        if (told) events.get(caller)?.push(told)
        // A patch that changed nothing (a move to where it is, a second discharge) is no entry.
        if (t.operation && JSON.stringify(was) !== JSON.stringify(now))
          audits.get(caller)?.push({ operation: t.operation, recordId: t.id, before: was, after: now })
      }
    }
  }

  return { apply, events, audits, recordIds }
}

/** What a caller must be told, given what it could GET before and after. */
function tell(resource: ResourceName, was: unknown, now: unknown): Told | null {
  if (was === null && now === null) return null
  if (was === null) return { event: `${resource} created`, data: now }
  if (now === null) return { event: `${resource} removed`, data: was }
  if (JSON.stringify(was) === JSON.stringify(now)) return null
  return { event: `${resource} patched`, data: now }
}
