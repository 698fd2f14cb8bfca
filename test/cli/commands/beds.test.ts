import { join } from 'node:path'
import t, { type Test } from 'tap'
import { buildApp } from '../../../app.js'
import { operatingUser } from '../../../cli/commands/beds.js'
import type { CliIo } from '../../../cli/io.js'
import { runCli } from '../../../cli/run.js'
import { defaultConfig } from '../../../config.js'
import { openDatabase } from '../../../db/connection.js'
import type { Role } from '../../../domain/principal.js'
import { bearer } from '../../helper.js'

async function beds(database: string, args: string[]) {
  const out: string[] = []
  const err: string[] = []
  const io: CliIo = { out: (line) => out.push(line), err: (line) => err.push(line) }
  const code = await runCli(['--database', database, 'beds', ...args], io)
  return { code, out, err: err.join('\n') }
}

/** The oracle: what the table holds, in plain SQL. */
function keptRows(database: string) {
  const db = openDatabase(database)
  try {
    return db.prepare('SELECT facility, bed, room FROM kept_beds ORDER BY facility, bed').all()
  } finally {
    db.close()
  }
}

/** Discharges a stay through the API, as a ward would. */
function discharge(app: Awaited<ReturnType<typeof buildApp>>, token: string, id: string) {
  return app.inject({
    method: 'PATCH',
    url: `/ward-occupants/${id}`,
    headers: bearer(token),
    payload: { discharge: true },
  })
}

/** A server on a database file of the test's, which the CLI changes beside it; `token` makes its tokens. */
async function wardOnFile(t: Test) {
  const database = join(t.testdir(), 'facility.db')
  const app = await buildApp(defaultConfig({ DATABASE_PATH: database, LOG_LEVEL: 'silent', RATE_LIMIT_MAX: 0 }))
  t.teardown(() => app.close())
  const token = (account: string, role: Role, facility: string) =>
    app.tokens.create({ account, role, facility, label: account }).token
  return { database, app, token }
}

t.test('beds add|list|remove keep the beds that were never occupied, shown free on the board', async (t) => {
  const { database, app, token } = await wardOnFile(t)
  const readA = token('viewer-a', 'read', 'A')
  const readB = token('viewer-b', 'read', 'B')
  const writeA = token('nurse-a', 'write', 'A')
  const bedsOf = async (token: string) =>
    (await app.inject({ url: '/beds', headers: bearer(token) })).json().beds as { bed: string; room?: string }[]

  t.same(await beds(database, ['add', '--facility', 'A', '--room', 'R-4', '--bed', 'B-9']), {
    code: 0,
    out: ['listed bed B-9'],
    err: '',
  })
  t.equal((await beds(database, ['add', '--bed', 'B-0'])).code, 0, 'a bed of the records without a facility')
  t.same(keptRows(database), [
    { facility: '', bed: 'B-0', room: null },
    { facility: 'A', bed: 'B-9', room: 'R-4' },
  ])
  t.same((await beds(database, ['list'])).out, ['*\t-\tB-0', 'A\tR-4\tB-9'])
  t.same((await beds(database, ['list', '--facility', 'A'])).out, ['A\tR-4\tB-9'])

  // The running server sees the file's change on the next request.
  t.same(
    await bedsOf(readA),
    [{ bed: 'B-9', room: 'R-4', active: [], state: 'free' }],
    'free, in its room, never occupied',
  )
  t.same(await bedsOf(readB), [], 'not in another facility')

  t.same((await beds(database, ['add', '--facility', 'A', '--room', 'R-5', '--bed', 'B-9'])).out, [
    'bed B-9 was listed already; room updated',
  ])
  t.equal((await bedsOf(readA))[0]?.room, 'R-5')

  // A listed bed that has occupants: the administrator's room wins; taken off the list, it stays.
  await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(writeA),
    payload: { encounter: 'e', bed: 'B-9', room: 'R-x', occupiedBy: 'p' },
  })
  t.same(
    (await bedsOf(readA)).map((b) => [b.bed, b.room]),
    [['B-9', 'R-5']],
  )
  t.same(await beds(database, ['remove', '--facility', 'A', '--bed', 'B-9']), {
    code: 0,
    out: ['took bed B-9 off the list; it stays on the board while its stay is active'],
    err: '',
  })
  t.same(
    (await bedsOf(readA)).map((b) => [b.bed, b.room]),
    [['B-9', 'R-x']],
    'still on the board, from its occupant',
  )
  t.same(keptRows(database), [{ facility: '', bed: 'B-0', room: null }])
})

t.test('beds refuses what it cannot do, with a message', async (t) => {
  const database = join(t.testdir(), 'facility.db')
  openDatabase(database).close()
  const cases: [string[], RegExp][] = [
    [['remove', '--bed', 'B-1'], /not listed/],
    [['remove', '--facility', 'A', '--bed', 'B-1'], /not listed in A/],
    [['add'], /required option '--bed <bed>'/],
    [['add', '--bed', ' '], /must not be empty/],
    [['add', '--bed', 'B-1', '--facility', ''], /must not be empty/],
    [['add', '--bed', 'x'.repeat(201)], /at most 200/],
    [['move', '--bed', 'B-1'], /unknown command/],
    [['state', '--bed', 'B-1', '--state', 'closed'], /bed B-1 is not a bed of the records without a facility/],
    [['state', '--bed', 'B-1', '--state', 'dirty'], /argument 'dirty' is invalid/],
    [['state', '--bed', 'B-1'], /required option '--state <state>'/],
  ]
  for (const [args, message] of cases) {
    const { code, err } = await beds(database, args)
    t.not(code, 0, `${args.join(' ')}: fails`)
    t.match(err, message, `${args.join(' ')}: ${message}`)
  }
  t.same(keptRows(database), [], 'nothing was written')
  const db = openDatabase(database)
  t.equal(db.prepare('SELECT count(*) FROM bed_states').pluck().get(), 0)
  db.close()
  const missing = await beds(join(t.testdir(), 'nope.db'), ['list'])
  t.equal(missing.code, 1)
  t.match(missing.err, /no database at/)
})

t.test('beds state sets and clears a housekeeping state: audited, on the feed, seen by the server', async (t) => {
  const database = join(t.testdir(), 'facility.db')
  const app = await buildApp(defaultConfig({ DATABASE_PATH: database, LOG_LEVEL: 'silent', RATE_LIMIT_MAX: 0 }))
  t.teardown(() => app.close())
  const writeA = app.tokens.create({ account: 'nurse-a', role: 'write', facility: 'A', label: 'w' }).token
  const bedsOf = async () => (await app.inject({ url: '/beds', headers: bearer(writeA) })).json().beds
  await beds(database, ['add', '--facility', 'A', '--bed', 'B-1'])
  t.same(
    await beds(database, ['state', '--facility', 'A', '--bed', 'B-1', '--state', 'closed', '--note', 'broken rail']),
    {
      code: 0,
      out: ['bed B-1: closed'],
      err: '',
    },
  )
  t.match(await bedsOf(), [
    { bed: 'B-1', state: 'closed', housekeeping: { state: 'closed', note: 'broken rail', setBy: /^cli:/ } },
  ])
  const admit = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(writeA),
    payload: { encounter: 'e', bed: 'B-1', occupiedBy: 'p' },
  })
  t.equal(admit.statusCode, 409)
  t.equal(admit.json().code, 'BED_NOT_AVAILABLE')
  t.same((await beds(database, ['state', '--facility', 'A', '--bed', 'B-1', '--state', 'none'])).out, ['bed B-1: free'])
  t.match(await bedsOf(), [{ bed: 'B-1', state: 'free' }])
  const audit = (
    await app.inject({
      url: '/audit?resource=bed-states',
      headers: bearer(app.tokens.create({ account: 'root', role: 'admin', facility: null, label: 'r' }).token),
    })
  ).json()
  t.match(audit.entries, [
    { account: /^cli:/, facility: 'A', recordId: 'B-1', after: { state: 'closed' } },
    { account: /^cli:/, facility: 'A', recordId: 'B-1', after: { state: 'free' } },
  ])
  t.equal(app.db.prepare(`SELECT count(*) FROM feed_events WHERE resource = 'bed-states'`).pluck().get(), 2)
})

t.test('beds remove takes off any bed without an active stay, listed or not', async (t) => {
  const database = join(t.testdir(), 'facility.db')
  const app = await buildApp(defaultConfig({ DATABASE_PATH: database, LOG_LEVEL: 'silent', RATE_LIMIT_MAX: 0 }))
  t.teardown(() => app.close())
  const writeA = app.tokens.create({ account: 'nurse-a', role: 'write', facility: 'A', label: 'w' }).token
  const admitted = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(writeA),
    payload: { encounter: 'e', bed: 'B-X', occupiedBy: 'p' },
  })
  const bedsOf = async () => (await app.inject({ url: '/beds', headers: bearer(writeA) })).json().beds
  const refused = await beds(database, ['remove', '--facility', 'A', '--bed', 'B-X'])
  t.equal(refused.code, 1)
  t.match(refused.err, /bed B-X in A has an active stay/)
  await discharge(app, writeA, admitted.json().id)
  t.same((await beds(database, ['remove', '--facility', 'A', '--bed', 'B-X'])).out, ['removed bed B-X'])
  t.same(await bedsOf(), [], 'a bed with a history, never listed, is off the board')
})

t.test("the CLI acts as the user's uid when the system has no name for it (a container's arbitrary uid)", async (t) => {
  // What os.userInfo() does for a uid without a passwd entry (OpenShift's random uids).
  const nameless = () => {
    throw Object.assign(new Error('A system error occurred: uv_os_get_passwd returned ENOENT'), {
      code: 'ERR_SYSTEM_ERROR',
    })
  }
  t.match(operatingUser(nameless), /^uid-\d+$/, 'its uid')
  t.equal(
    operatingUser(() => ({ username: 'ann' })),
    'ann',
    'a named user by name',
  )
})

/** The audit log's entries about the list of beds, in plain SQL: the oracle. */
function bedAuditRows(database: string) {
  const db = openDatabase(database)
  try {
    return db
      .prepare(
        "SELECT account, facility, record_id, operation, before, after FROM audit_log WHERE resource = 'beds' ORDER BY seq",
      )
      .all()
  } finally {
    db.close()
  }
}

t.test(
  'every change of the list of beds is an audit entry of the operator; one that changes nothing is none',
  async (t) => {
    const { database, app, token } = await wardOnFile(t)
    const writeA = token('nurse-a', 'write', 'A')
    const adminA = token('admin-a', 'admin', 'A')
    const adminB = token('admin-b', 'admin', 'B')
    const account = `cli:${operatingUser()}`
    const admit = (bed: string) =>
      app.inject({
        method: 'POST',
        url: '/ward-occupants',
        headers: bearer(writeA),
        payload: { encounter: `e-${bed}`, bed, occupiedBy: 'p' },
      })

    for (const args of [
      ['add', '--facility', 'A', '--room', 'R-1', '--bed', 'B-1'],
      ['add', '--facility', 'A', '--room', 'R-1', '--bed', 'B-1'],
      ['add', '--facility', 'A', '--room', 'R-2', '--bed', 'B-1'],
      ['add', '--facility', 'A', '--bed', 'B-2'],
    ])
      t.equal((await beds(database, args)).code, 0, args.join(' '))
    await admit('B-2')
    const discharged = await admit('B-3')
    await discharge(app, writeA, discharged.json().id)
    for (const args of [
      ['remove', '--facility', 'A', '--bed', 'B-1'],
      ['remove', '--facility', 'A', '--bed', 'B-2'],
      ['remove', '--facility', 'A', '--bed', 'B-3'],
    ])
      t.equal((await beds(database, args)).code, 0, args.join(' '))
    t.equal((await beds(database, ['remove', '--facility', 'A', '--bed', 'B-9'])).code, 1, 'unknown: nothing to log')
    t.equal((await beds(database, ['remove', '--facility', 'A', '--bed', 'B-2'])).code, 1, 'occupied, no longer listed')

    const row = (operation: string, bed: string, before: object | null, after: object | null) => ({
      account,
      facility: 'A',
      record_id: bed,
      operation,
      before: before === null ? null : JSON.stringify(before),
      after: after === null ? null : JSON.stringify(after),
    })
    t.same(bedAuditRows(database), [
      row('create', 'B-1', null, { facility: 'A', bed: 'B-1', room: 'R-1' }),
      row('patch', 'B-1', { facility: 'A', bed: 'B-1', room: 'R-1' }, { facility: 'A', bed: 'B-1', room: 'R-2' }),
      row('create', 'B-2', null, { facility: 'A', bed: 'B-2' }),
      row('delete', 'B-1', { facility: 'A', bed: 'B-1', room: 'R-2' }, null),
      row('delete', 'B-2', { facility: 'A', bed: 'B-2' }, null),
      row('delete', 'B-3', { facility: 'A', bed: 'B-3' }, null),
    ])

    const audit = async (token: string) =>
      (await app.inject({ url: '/audit?resource=beds', headers: bearer(token) })).json().entries as {
        recordId: string
        operation: string
        account: string
      }[]
    t.same(
      (await audit(adminA)).map((e) => [e.operation, e.recordId, e.account]),
      [
        ['create', 'B-1', account],
        ['patch', 'B-1', account],
        ['create', 'B-2', account],
        ['delete', 'B-1', account],
        ['delete', 'B-2', account],
        ['delete', 'B-3', account],
      ],
      "GET /audit shows the facility's admin",
    )
    t.same(await audit(adminB), [], "and not another facility's")
  },
)

t.test(
  'the audit of the list: beds without a facility, a cleared room, a listed bed with a past, a state removed with its bed',
  async (t) => {
    const { database, app, token } = await wardOnFile(t)
    const writeA = token('nurse-a', 'write', 'A')
    const stay = async (bed: string) => {
      const res = await app.inject({
        method: 'POST',
        url: '/ward-occupants',
        headers: bearer(writeA),
        payload: { encounter: `e-${bed}`, bed, occupiedBy: 'p', facility: 'A' },
      })
      return res.json().id as string
    }
    const run = async (args: string[]) => t.equal((await beds(database, args)).code, 0, args.join(' '))

    await run(['add', '--room', 'R-0', '--bed', 'N-1'])
    await run(['add', '--bed', 'N-1'])
    await run(['remove', '--bed', 'N-1'])
    await run(['add', '--facility', 'A', '--room', 'R-4', '--bed', 'B-4'])
    const past = await stay('B-4')
    await discharge(app, writeA, past)
    await run(['remove', '--facility', 'A', '--bed', 'B-4'])
    const mistyped = await stay('B-5')
    await discharge(app, writeA, mistyped)
    await run(['state', '--facility', 'A', '--bed', 'B-5', '--state', 'cleaning', '--note', 'after a spill'])
    // The stay removed (a mistyped bed): the bed leaves the ward's beds, its housekeeping state stays.
    t.equal(
      (await app.inject({ method: 'DELETE', url: `/ward-occupants/${mistyped}`, headers: bearer(writeA) })).statusCode,
      200,
    )
    t.same((await beds(database, ['remove', '--facility', 'A', '--bed', 'B-5'])).out, ['removed bed B-5'])

    const rows = (
      bedAuditRows(database) as {
        facility: string | null
        record_id: string
        operation: string
        before: string | null
        after: string | null
      }[]
    ).map((row) => ({ ...row, before: JSON.parse(row.before ?? 'null'), after: JSON.parse(row.after ?? 'null') }))
    t.match(rows, [
      {
        facility: null,
        record_id: 'N-1',
        operation: 'create',
        before: null,
        after: { facility: null, bed: 'N-1', room: 'R-0' },
      },
      { facility: null, record_id: 'N-1', operation: 'patch', after: { facility: null, bed: 'N-1' } },
      { facility: null, record_id: 'N-1', operation: 'delete', before: { facility: null, bed: 'N-1' }, after: null },
      { facility: 'A', record_id: 'B-4', operation: 'create' },
      { facility: 'A', record_id: 'B-4', operation: 'delete', before: { facility: 'A', bed: 'B-4', room: 'R-4' } },
      {
        facility: 'A',
        record_id: 'B-5',
        operation: 'delete',
        before: {
          facility: 'A',
          bed: 'B-5',
          housekeeping: { state: 'cleaning', note: 'after a spill', setBy: /^cli:/ },
        },
        after: null,
      },
    ])
    t.equal(rows.length, 6)
    t.notOk('room' in (rows[1]?.after ?? {}), 'the room cleared')
  },
)
