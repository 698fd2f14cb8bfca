import t, { type Test } from 'tap'
import type { BedPolicy } from '../../db/bed-policy.js'
import { createNotificationRepository } from '../../db/repositories/notifications.js'
import { bearer, type TestApp, type TestTokens } from '../helper.js'
import { feedWard } from '../hl7/ward.js'
import { planOf, recordEveryStatement } from './captured-statements.js'

/**
 * Every index of the migrated schema earns its place: each is written by every insert into its
 * table, so each must serve a documented query (a list filter or order, the inbox, a count,
 * retention, an ADT lookup ...) whose plan uses it, or hold a uniqueness the service promises. The
 * SQL is the service's own: every statement any repository runs while the scenarios below go
 * through the app (HTTP, MLLP, the retention jobs) is recorded with its values and EXPLAINed.
 * An index missing from USES fails the test: a new index comes with the query that needs it.
 */

type Scenario = (ctx: { app: TestApp; tokens: TestTokens; send: Send; state: State }) => Promise<unknown>
type Send = Awaited<ReturnType<typeof feedWard>>['send']
interface State {
  occupant?: string
  notification?: string
  template?: string
  message?: string
}

interface QueryUse {
  /** The documented query, in words (and where it is documented). */
  query: string
  /** The scenario that runs it; one of its statements' plans must name the index. */
  scenario: keyof typeof SCENARIOS
}
interface ConstraintUse {
  /** The uniqueness the index holds (a promise), not a query. */
  unique: string
}

const DAY_MS = 86_400_000
const get = (url: string, token: keyof TestTokens) => async (c: Parameters<Scenario>[0]) => {
  const res = await c.app.inject({ url, headers: bearer(c.tokens[token]) })
  if (res.statusCode !== 200) throw new Error(`GET ${url}: ${res.statusCode} ${res.body}`)
  return res
}
const ok = (ack: { code: string; text: string }) => {
  if (ack.code !== 'AA') throw new Error(`ADT: ${ack.code} ${ack.text}`)
}

/** What the service does, each a named step; the statements it runs are recorded under its name. */
const SCENARIOS = {
  'ward occupant: create': async ({ app, tokens, state }: Parameters<Scenario>[0]) => {
    const res = await app.inject({
      method: 'POST',
      url: '/ward-occupants',
      headers: { ...bearer(tokens.writeA), 'idempotency-key': 'k-1' },
      payload: { bed: 'NEW-1', encounter: 'enc-new', occupiedBy: 'patient-new' },
    })
    state.occupant = res.json().id
  },
  'ward occupant: get by id': ({ app, tokens, state }: Parameters<Scenario>[0]) =>
    app.inject({ url: `/ward-occupants/${state.occupant}`, headers: bearer(tokens.readA) }),
  'ward occupant: discharge': ({ app, tokens, state }: Parameters<Scenario>[0]) =>
    app.inject({
      method: 'PATCH',
      url: `/ward-occupants/${state.occupant}`,
      headers: bearer(tokens.writeA),
      payload: { discharge: true },
    }),
  'list: active beds of a facility': get('/ward-occupants?dischargedAt=null&$limit=50', 'readA'),
  'list: a bed, its history newest first': get('/ward-occupants?bed=B-3&$sort[occupiedAt]=-1&$limit=50', 'readA'),
  'list: an encounter': get('/ward-occupants?encounter=enc-7', 'readA'),
  'list: a patient account': get('/ward-occupants?occupiedBy=patient-7', 'readA'),
  'list: a facility over time': get('/ward-occupants?createdAt[$gte]=1000&createdAt[$lt]=900000000', 'readA'),
  'list: every facility over time': get('/ward-occupants?createdAt[$gte]=1000&createdAt[$lt]=900000000', 'admin'),
  'bed board': get('/beds', 'readA'),
  'form template: create and delete': async ({ app, tokens }: Parameters<Scenario>[0]) => {
    const res = await app.inject({
      method: 'POST',
      url: '/form-templates',
      headers: bearer(tokens.admin),
      payload: {
        type: 'intake',
        name: 'x',
        facility: 'A',
        tags: ['vitals'],
        items: [{ type: 'trueorfalse', question: 'ok?' }],
      },
    })
    await app.inject({ method: 'DELETE', url: `/form-templates/${res.json().id}`, headers: bearer(tokens.admin) })
  },
  'form templates: a tag': get('/form-templates?tags=vitals', 'admin'),
  'form templates: a type': get('/form-templates?type=intake', 'admin'),
  'form templates: of a facility': get('/form-templates', 'readA'),
  'form templates: of every facility': get('/form-templates', 'admin'),
  'form templates: the visible ones': get('/form-templates?hiddenAt=null', 'admin'),
  'notifications: inbox of a facility-bound account': get('/notifications?$unseen=true&$sort[createdAt]=-1', 'readA'),
  'notifications: inbox of an account without a facility': get('/notifications?$sort[createdAt]=-1', 'admin'),
  'notifications: seen by an account': get('/notifications?seenBy=nurse-a', 'admin'),
  'notifications: of a type, newest first': get('/notifications?type=ward&$sort[createdAt]=-1&$limit=20', 'admin'),
  'notifications: of some codes': get('/notifications?code[$in][]=note&code[$in][]=reminder', 'admin'),
  'notifications: unseen count': get('/notifications/unseen-count', 'readA'),
  'notifications: mark seen': async ({ app, tokens }: Parameters<Scenario>[0]) => {
    const page = await app.inject({ url: '/notifications?$limit=1', headers: bearer(tokens.readA) })
    const id = page.json().notifications[0].id
    await app.inject({ method: 'POST', url: `/notifications/${id}/seen`, headers: bearer(tokens.readA) })
  },
  'audit: a record history': ({ app, tokens, state }: Parameters<Scenario>[0]) =>
    get(`/audit?resource=ward-occupants&recordId=${state.occupant}`, 'admin')({ app, tokens } as never),
  'audit: who read a record': ({ app, tokens, state }: Parameters<Scenario>[0]) =>
    get(`/audit?kind=reads&recordId=${state.occupant}`, 'admin')({ app, tokens } as never),
  'audit: the reads of a facility': get('/audit?kind=reads', 'adminA'),
  'ADT: admission': async ({ send }: Parameters<Scenario>[0]) =>
    ok(await send({ event: 'A01', encounter: 'ADT-1', patient: 'P-ADT', bed: 'ADT-B1', room: 'R1' })),
  'ADT: pending admission, then its arrival': async ({ send }: Parameters<Scenario>[0]) => {
    ok(await send({ event: 'A14', encounter: 'ADT-2', patient: 'P-ADT2', bed: 'ADT-B2', room: 'R1' }))
    ok(await send({ event: 'A01', encounter: 'ADT-2', patient: 'P-ADT2', bed: 'ADT-B2', room: 'R1' }))
  },
  'ADT: a parked message and its admins': async ({ send }: Parameters<Scenario>[0]) => {
    // A discharge of an encounter never admitted: parked, and the facility's admins are told.
    const ack = await send({ event: 'A03', encounter: 'ADT-3', patient: 'P-ADT3' })
    if (!ack.text.startsWith('parked')) throw new Error(`not parked: ${ack.code} ${ack.text}`)
  },
  'ADT: parked messages listed, one read': async ({ app, tokens, state }: Parameters<Scenario>[0]) => {
    const res = await get('/hl7/messages?status=parked', 'admin')({ app, tokens } as never)
    state.message = res.json().hl7Messages[0].id
    await get(`/hl7/messages/${state.message}`, 'admin')({ app, tokens } as never)
  },
  'retention: feed events': ({ app }: Parameters<Scenario>[0]) =>
    app.writes.run(() => app.repos.feed.prune(Date.now() - DAY_MS)),
  'retention: read-log entries': ({ app }: Parameters<Scenario>[0]) =>
    app.writes.run(() => app.repos.readLog.prune(Date.now() - DAY_MS)),
  'retention: idempotency keys': ({ app }: Parameters<Scenario>[0]) =>
    app.writes.run(() => app.repos.idempotencyKeys.prune(Date.now() - DAY_MS)),
  'retention: ADT message log': ({ app }: Parameters<Scenario>[0]) =>
    app.writes.run(() => app.hl7.messages.prune(Date.now() - DAY_MS)),
} satisfies Record<string, Scenario>

/** Each index: the query that needs it, or the promise its uniqueness holds. */
const USES: Record<string, QueryUse | ConstraintUse> = {
  // ward occupants (docs/API.md, "Recommended filters")
  sqlite_autoindex_ward_occupants_1: { query: 'a ward occupant by id', scenario: 'ward occupant: get by id' },
  ward_occupants_active: { query: 'the active beds of a facility', scenario: 'list: active beds of a facility' },
  ward_occupants_bed: { query: "a bed's history, newest first", scenario: 'list: a bed, its history newest first' },
  ward_occupants_encounter: { query: "an encounter's stays", scenario: 'list: an encounter' },
  ward_occupants_occupied_by: { query: "a patient account's stays", scenario: 'list: a patient account' },
  ward_occupants_facility_created: { query: "a facility's records over time", scenario: 'list: a facility over time' },
  ward_occupants_created: { query: 'every record over time', scenario: 'list: every facility over time' },
  ward_occupants_active_bed: { unique: 'one active occupant per bed (BED_POLICY=exclusive)' },
  // the bed board (docs/BOARD.md)
  bed_expectations_encounter: {
    query: 'the expectation an admission of its encounter ends',
    scenario: 'ADT: pending admission, then its arrival',
  },
  // form templates (docs/form-templates.md)
  sqlite_autoindex_form_templates_1: { query: 'a form template by id', scenario: 'form templates: a tag' },
  form_template_tags_template: {
    query: "a template's tags, replaced or deleted",
    scenario: 'form template: create and delete',
  },
  form_templates_type: { query: 'templates of a type', scenario: 'form templates: a type' },
  form_templates_facility_created: { query: "a facility's templates", scenario: 'form templates: of a facility' },
  form_templates_created: { query: 'every template, oldest first', scenario: 'form templates: of every facility' },
  form_templates_visible: { query: 'the visible templates', scenario: 'form templates: the visible ones' },
  // notifications (docs/notifications.md)
  sqlite_autoindex_notifications_1: { query: 'a notification by id', scenario: 'notifications: mark seen' },
  notifications_audience: {
    query: "a facility-bound account's broadcasts, newest first",
    scenario: 'notifications: inbox of a facility-bound account',
  },
  notifications_broadcast_created: {
    query: 'every broadcast, newest first (an account without a facility)',
    scenario: 'notifications: inbox of an account without a facility',
  },
  notification_recipients_inbox: {
    query: 'the notifications addressed to a facility-bound account',
    scenario: 'notifications: inbox of a facility-bound account',
  },
  notification_recipients_account_created: {
    query: 'the notifications addressed to an account without a facility',
    scenario: 'notifications: inbox of an account without a facility',
  },
  notification_recipients_notification: {
    query: "a notification's addressees (its produced feed event)",
    scenario: 'ward occupant: create',
  },
  notification_seen_account: {
    query: 'the notifications an account has seen',
    scenario: 'notifications: seen by an account',
  },
  notifications_type: {
    query: "the count of a type's notifications (a caller without a facility)",
    scenario: 'notifications: of a type, newest first',
  },
  notifications_code: {
    query: "the count of some codes' notifications (a caller without a facility)",
    scenario: 'notifications: of some codes',
  },
  // the audit trail and the read log (docs/API.md, "Audit")
  audit_log_record: { query: "a record's history", scenario: 'audit: a record history' },
  read_log_record: { query: 'who read a record', scenario: 'audit: who read a record' },
  read_log_facility: { query: "the reads of a facility's tokens", scenario: 'audit: the reads of a facility' },
  read_log_at: { query: 'read-log retention (AUDIT_READS_KEEP_DAYS)', scenario: 'retention: read-log entries' },
  // retention of the keys (the feed's finds its oldest events in seq order, no index)
  idempotency_keys_created: { query: 'idempotency keys past their time', scenario: 'retention: idempotency keys' },
  // the ADT feed (docs/ADT.md)
  sqlite_autoindex_hl7_messages_1: {
    query: 'a logged message by id',
    scenario: 'ADT: parked messages listed, one read',
  },
  hl7_messages_answered: {
    query: 'a resend: the same sender and control id answered before',
    scenario: 'ADT: admission',
  },
  hl7_messages_refused: { unique: 'a reused control id refused once per content (exactly-once)' },
  hl7_messages_encounter_applied: {
    query: "the encounter's applied messages (the out-of-order floor)",
    scenario: 'ADT: admission',
  },
  hl7_messages_status: { query: 'the parked messages', scenario: 'ADT: parked messages listed, one read' },
  hl7_messages_unpruned: { query: 'message log retention (HL7_KEEP_DAYS)', scenario: 'retention: ADT message log' },
  provider_admins_facility: {
    query: "the admins of a parked message's facility",
    scenario: 'ADT: a parked message and its admins',
  },
  sqlite_autoindex_provider_admins_1: { unique: 'one row per provider account' },
  sqlite_autoindex_blocked_accounts_1: { unique: 'one row per blocked account (a second block changes nothing)' },
  sqlite_autoindex_tokens_1: { unique: 'one row per token hash' },
}

const FACILITIES = ['A', 'B', 'C', null]

/** A hospital in miniature, as test/db/query-plans.test.ts fills it: beds with histories, notifications, templates. */
async function fill(app: TestApp, tokens: TestTokens) {
  for (const [i, facility] of ['A', 'B', 'C'].entries()) {
    await app.inject({
      method: 'POST',
      url: '/form-templates',
      headers: bearer(tokens.admin),
      payload: {
        type: 'intake',
        name: `form ${i}`,
        facility,
        tags: ['vitals'],
        items: [{ type: 'trueorfalse', question: 'ok?' }],
      },
    })
  }
  const insert = app.db.prepare(
    `INSERT INTO ward_occupants (id, created_at, created_by, facility, encounter, room, bed, provider,
       occupied_at, occupied_by, discharged_at, discharged_by)
     VALUES (?, ?, 'nurse', ?, ?, ?, ?, NULL, ?, ?, ?, ?)`,
  )
  const beds = 40 * FACILITIES.length
  const count = 2000
  app.db.transaction(() => {
    for (let i = 0; i < count; i++) {
      const slot = i % beds
      const at = 1_000 + i * 60_000
      const active = i >= count - beds
      const facility = FACILITIES[slot % FACILITIES.length] ?? null
      const bed = `B-${Math.floor(slot / FACILITIES.length)}`
      insert.run(
        i.toString(16).padStart(24, '0'),
        at,
        facility,
        `enc-${i}`,
        'R-1',
        bed,
        at,
        `patient-${i % 900}`,
        active ? null : at + 30_000,
        active ? null : 'nurse',
      )
    }
  })()
  const notifications = createNotificationRepository(app.db)
  app.db.transaction(() => {
    for (let i = 0; i < 600; i++) {
      const facility = FACILITIES[i % FACILITIES.length] ?? null
      notifications.create({
        // a mix, as a ward's feed holds: a type or a code is a share, not all of it
        code: ['note', 'reminder', 'handover', 'lab-result', 'bed-occupied', 'patient-discharged', 'form-published'][
          i % 7
        ] as string,
        type: ['ward', 'form', 'system', 'message', 'lab'][i % 5] as string,
        title: 't',
        body: 'b',
        facility,
        to: i % 4 === 0 ? [`nurse-${i % 50}`, 'nurse-a', 'viewer-a', 'admin-1'] : undefined,
        unboundOnly: facility === null && i % 3 === 0,
      })
    }
  })()
}

const indexNames = (app: TestApp): string[] =>
  app.db.prepare("SELECT name FROM sqlite_schema WHERE type = 'index' ORDER BY name").pluck().all() as string[]

const isUnique = (app: TestApp, name: string): boolean => {
  const table = app.db.prepare('SELECT tbl_name FROM sqlite_schema WHERE name = ?').pluck().get(name) as string
  const list = app.db.pragma(`index_list(${table})`) as { name: string; unique: number }[]
  return list.some((index) => index.name === name && index.unique === 1)
}

/** The indexes the plans of the statements recorded under each scenario use. */
function indexesUsed(app: TestApp, ran: ReturnType<typeof recordEveryStatement>['ran']) {
  const used = new Map<string, Set<string>>()
  const seen = new Set<string>()
  for (const execution of ran) {
    const key = `${execution.scenario}\n${execution.sql}\n${JSON.stringify(execution.params)}`
    if (seen.has(key) || /^\s*(PRAGMA|EXPLAIN|BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)\b/i.test(execution.sql)) continue
    seen.add(key)
    for (const detail of planOf(app.db, execution)) {
      const index = /USING (?:COVERING )?INDEX (\w+)/.exec(detail)?.[1]
      if (index === undefined) continue
      const scenarios = used.get(index) ?? new Set<string>()
      scenarios.add(execution.scenario)
      used.set(index, scenarios)
    }
  }
  return used
}

async function check(t: Test, policy: BedPolicy) {
  const recorder = recordEveryStatement()
  t.teardown(recorder.stop)
  const { app, tokens, send } = await feedWard(t, 'A', {
    BED_POLICY: policy,
    AUDIT_READS: true,
    WARD_OCCUPANT_PAGE_CACHE_BYTES: 0,
    NOTIFICATION_PAGE_CACHE_BYTES: 0,
  })
  await fill(app, tokens)
  const state: State = {}
  for (const [name, scenario] of Object.entries(SCENARIOS)) {
    recorder.scenario = name
    await scenario({ app, tokens, send, state })
    // the read-log entries of the requests are written after their answers
    await app.writes.run(() => undefined)
  }
  recorder.stop()
  // With the schema's planner hints, and with the statistics of ANALYZE (as a hospital's file has
  // them after a while): some plans pick an index only once the counts are known.
  const used = indexesUsed(app, recorder.ran)
  app.db.exec('ANALYZE')
  for (const [index, scenarios] of indexesUsed(app, recorder.ran))
    for (const scenario of scenarios) used.set(index, (used.get(index) ?? new Set()).add(scenario))
  for (const name of indexNames(app)) {
    const use = USES[name]
    if (use === undefined) {
      t.fail(`index ${name}: no listed query uses it (used by: ${[...(used.get(name) ?? ['nothing'])].join('; ')})`)
      continue
    }
    if ('unique' in use) {
      t.ok(isUnique(app, name), `${name} holds a uniqueness: ${use.unique}`)
      continue
    }
    const by = used.get(name) ?? new Set()
    t.ok(
      by.has(use.scenario),
      `${name} serves ${use.query} (${use.scenario}); plans that use it: ${[...by].join('; ') || 'none'}`,
    )
  }
}

t.test('every index serves a listed query (BED_POLICY=exclusive)', (t) => check(t, 'exclusive'))
t.test('every index serves a listed query (BED_POLICY=shared)', (t) => check(t, 'shared'))
