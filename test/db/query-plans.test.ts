import t, { type Test } from 'tap'
import { createNotificationRepository } from '../../db/repositories/notifications.js'
import { bearer, buildTestApp, type TestApp, type TestTokens } from '../helper.js'
import { planOf, recordStatements } from './captured-statements.js'

/**
 * Every list filter path the docs recommend must be an index search, never a full table scan,
 * with SQLite's built-in planner hints (a fresh database) and after ANALYZE on real data. The SQL
 * checked is the SQL the service runs: every statement prepared while the lists are requested.
 */

interface PathCase {
  url: string
  /** The index the plan must use, when one was made for this path. */
  index?: RegExp | null
  /** Tokens bound to a facility must never walk a whole index either; unbound ones may. */
  token: keyof TestTokens
}

/** Ward occupant paths, each with the index that must answer it (the one schema.sql made for it). */
const WARD_OCCUPANTS: [string, RegExp | null][] = [
  // the active beds (the ward's main screen), as docs/API.md shows it
  ['dischargedAt=null', /ward_occupants_active(_bed)?\b/],
  ['dischargedAt=null&$limit=50', /ward_occupants_active(_bed)?\b/],
  ['dischargedAt=null&$sort[occupiedAt]=-1&$select[]=bed&$select[]=occupiedBy', /ward_occupants_active/],
  // a bed: its active occupant, its history, who was in it during a month
  ['bed=B-3', /ward_occupants_bed\b/],
  ['bed=B-3&dischargedAt=null', /ward_occupants_(bed|active|active_bed)\b/],
  ['bed=B-3&$sort[occupiedAt]=-1&$limit=50', /ward_occupants_bed\b/],
  ['bed=B-3&occupiedAt[$gte]=1000&occupiedAt[$lt]=900000000', /ward_occupants_bed\b/],
  // an encounter, a patient account
  ['encounter=enc-7', /ward_occupants_encounter\b/],
  ['occupiedBy=patient-7', /ward_occupants_occupied_by\b/],
  // a facility's records over time, and the default order
  ['createdAt[$gte]=1000&createdAt[$lt]=900000000', /ward_occupants_(facility_)?created\b.*created_at>/],
  ['createdAt[$gte]=1000&createdAt[$lt]=900000000&$sort[createdAt]=-1', /ward_occupants_(facility_)?created\b/],
  ['', null],
  ['$limit=20&$skip=40', null],
]

// docs/form-templates.md: by type, tag and visibility; tags any of; the light picker list.
const FORM_TEMPLATES: string[] = [
  'type=intake&tags=vitals&hiddenAt=null',
  'tags[$in][]=vitals&tags[$in][]=pain',
  'type=intake',
  'hiddenAt=null',
  '',
]
// Only a facility's templates are walked for these (an unbound token walks every template).
const FORM_TEMPLATES_SCOPED: string[] = [
  'tags[$nin][]=vitals&tags[$nin][]=pain',
  '$select[]=name&$select[]=type&$sort[name]=1',
]

// docs/notifications.md
const NOTIFICATIONS: string[] = [
  'type=ward&$sort[createdAt]=-1&$limit=20',
  'createdAt[$gt]=1000',
  'code[$in][]=bed-occupied&code[$in][]=patient-discharged',
  '$unseen=true&$sort[createdAt]=-1',
  'seenBy=nurse-a',
  '',
]

const SCOPED: (keyof TestTokens)[] = ['writeA', 'readA']
const UNBOUND: (keyof TestTokens)[] = ['write', 'admin']

function cases(resource: string, queries: string[], tokens: (keyof TestTokens)[]): PathCase[] {
  return queries.flatMap((query) => tokens.map((token) => ({ url: `/${resource}?${query}`, token })))
}

const CASES: PathCase[] = [
  ...WARD_OCCUPANTS.flatMap(([query, index]) =>
    cases('ward-occupants', [query], [...SCOPED, ...UNBOUND]).map((c) => ({ ...c, index })),
  ),
  ...cases('form-templates', FORM_TEMPLATES, [...SCOPED, ...UNBOUND]),
  ...cases('form-templates', FORM_TEMPLATES_SCOPED, SCOPED),
  ...cases('notifications', NOTIFICATIONS, [...SCOPED, ...UNBOUND]),
  ...cases('notifications/unseen-count', ['', 'type=ward'], [...SCOPED, ...UNBOUND]),
]

const TABLES = ['ward_occupants', 'form_templates', 'notifications']

const TYPES = ['ward', 'form', 'system', 'message', 'lab']
const CODES = ['bed-occupied', 'patient-discharged', 'form-published', 'lab-result', 'note', 'reminder', 'handover']

/** A hospital in miniature: three facilities and one without, beds with a history, one active occupant each. */
function fill(app: TestApp) {
  const insert = app.db.prepare(
    `INSERT INTO ward_occupants (id, created_at, created_by, facility, encounter, room, bed, provider,
       occupied_at, occupied_by, discharged_at, discharged_by)
     VALUES (?, ?, 'nurse', ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  const facilities = ['A', 'B', 'C', null]
  const beds = 40 * facilities.length
  const count = 4000
  app.db.transaction(() => {
    for (let i = 0; i < count; i++) {
      const slot = i % beds
      const at = 1_000 + i * 60_000
      const active = i >= count - beds
      insert.run(
        `${i.toString(16).padStart(24, '0')}`,
        at,
        facilities[slot % facilities.length] ?? null,
        `enc-${i}`,
        `R-${slot % 10}`,
        `B-${Math.floor(slot / facilities.length)}`,
        i % 3 ? `dr-${i % 7}` : null,
        at,
        `patient-${i % 900}`,
        active ? null : at + 30_000,
        active ? null : 'nurse',
      )
    }
  })()
  const notifications = createNotificationRepository(app.db)
  app.db.transaction(() => {
    for (let i = 0; i < 1500; i++) {
      const to = i % 4 === 0 ? [`nurse-${i % 50}`, 'nurse-a'] : undefined
      const facility = facilities[i % facilities.length] ?? null
      notifications.create({
        // a mix, as a ward's feed holds: the filtered type and codes are a share, not all of it
        code: CODES[i % CODES.length] as string,
        type: TYPES[i % TYPES.length] as string,
        title: 't',
        body: 'b',
        facility,
        to,
        // some of them of records without a facility (ward occupants of no facility)
        unboundOnly: facility === null && i % 3 === 0,
      })
    }
  })()
}

async function fillTemplates(t: Test, app: TestApp, tokens: TestTokens) {
  const tagSets = [['vitals'], ['pain', 'vitals'], ['wound'], []]
  for (let i = 0; i < 240; i++) {
    const res = await app.inject({
      method: 'POST',
      url: '/form-templates',
      headers: bearer(tokens.admin),
      payload: {
        type: i % 3 ? 'intake' : 'discharge',
        name: `form ${i}`,
        facility: ['A', 'B', 'C'][i % 3],
        tags: tagSets[i % tagSets.length],
        items: [{ type: 'trueorfalse', question: 'ok?' }],
      },
    })
    if (res.statusCode !== 200) t.fail(`seeding a form template: ${res.statusCode} ${res.body}`)
  }
}

/** A full table scan: SCAN of the table (alias r) without an index. */
function isTableScan(detail: string): boolean {
  const scan = new RegExp(`^SCAN (r|${TABLES.join('|')})\\b`).test(detail)
  return scan && !/USING (COVERING )?INDEX/.test(detail)
}

/** For a facility-bound token even a scan of a whole index is wrong: it reads every facility. */
function isAnyScan(detail: string): boolean {
  return new RegExp(`^SCAN (r|${TABLES.join('|')})\\b`).test(detail)
}

async function check(t: Test, analyzed: boolean) {
  // Remembered ward occupant pages would answer the same list asked by a second token without SQL.
  const { app, tokens } = await buildTestApp(t, { WARD_OCCUPANT_PAGE_CACHE_BYTES: 0 })
  fill(app)
  await fillTemplates(t, app, tokens)
  if (analyzed) app.db.exec('ANALYZE')
  const recorder = recordStatements(app.db)
  t.teardown(recorder.stop)
  let captured = 0
  for (const { url, token, index } of CASES) {
    recorder.ran.length = 0
    const res = await app.inject({ url, headers: bearer(tokens[token]) })
    t.equal(res.statusCode, 200, `${url} answers`)
    // (an unfiltered unseen count reads the inbox counters, migration 11)
    const lists = recorder.ran.filter(({ sql }) =>
      /\bFROM (ward_occupants|form_templates|notifications) r\b|\bFROM notification_\w+_counts\b/.test(sql),
    )
    t.ok(lists.length > 0, `${url} (${token}): its statements were recorded`)
    captured += lists.length
    for (const execution of lists) {
      const { sql } = execution
      const details = planOf(app.db, execution)
      // Ward occupants are held to the stricter rule: a facility-bound token reads its facility only.
      const strict = SCOPED.includes(token) && url.startsWith('/ward-occupants')
      const bad = details.filter(strict ? isAnyScan : isTableScan)
      if (process.env.SHOW_PLANS) t.comment(`${url} (${token})\n${sql}\n  ${details.join('\n  ')}`)
      const message = `${url} (${token}) scans:\n${sql}\n  ${details.join('\n  ')}`
      t.same(bad, [], message)
      if (index)
        t.match(details.join('\n'), index, `${url} (${token}) uses its index:\n${sql}\n  ${details.join('\n  ')}`)
    }
  }
  t.ok(captured >= WARD_OCCUPANTS.length, `${captured} list statements were captured and checked`)
}

t.test('recommended list filters search indexes (fresh database, planner hints)', (t) => check(t, false))
t.test('recommended list filters search indexes (after ANALYZE)', (t) => check(t, true))
