import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import type { CliIo } from '../../../cli/io.js'
import { runCli } from '../../../cli/run.js'
import { openDatabase } from '../../../db/connection.js'
import { bearer, buildTestApp } from '../../helper.js'

function capture() {
  const out: string[] = []
  const err: string[] = []
  const io: CliIo = { out: (line) => out.push(line), err: (line) => err.push(line) }
  return { io, out, err }
}

async function notify(database: string, args: string[]) {
  const { io, out, err } = capture()
  const code = await runCli(['--database', database, 'notify', ...args], io)
  return { code, out, err: err.join('\n') }
}

const required = ['--code', 'new-queue-item', '--type', 'warehouse', '--title', 'Stock arrived', '--body', 'Gloves']

function countNotifications(database: string): number {
  const db = openDatabase(database)
  try {
    return (db.prepare('SELECT count(*) AS n FROM notifications').get() as { n: number }).n
  } finally {
    db.close()
  }
}

function createDatabase(database: string): void {
  openDatabase(database).close()
}

t.test('notify posts a notification and prints its id alone', async (t) => {
  const database = join(t.testdir(), 'facility.db')
  createDatabase(database)
  const t0 = Date.now()
  const everyone = await notify(database, required)
  t.equal(everyone.code, 0, everyone.err)
  t.equal(everyone.out.length, 1)
  t.match(everyone.out[0], /^[0-9a-f]{24}$/)
  const personal = await notify(database, [
    ...required,
    '--facility',
    'A',
    '--to',
    'nurse-a',
    'admin-a',
    '--direction',
    'outbound',
    '--meta',
    '{"queue":"pharmacy","items":3}',
  ])
  t.equal(personal.code, 0, personal.err)

  const { app, tokens } = await buildTestApp(t, { DATABASE_PATH: database })
  const get = (token: string, id: string) => app.inject({ url: `/notifications/${id}`, headers: bearer(token) })
  const broadcast = (await get(tokens.writeB, everyone.out[0] as string)).json()
  t.match(broadcast, { code: 'new-queue-item', type: 'warehouse', title: 'Stock arrived', body: 'Gloves', seenBy: [] })
  t.notOk('facility' in broadcast, 'without --facility it is for every facility')
  const record = (await get(tokens.writeA, personal.out[0] as string)).json()
  t.ok(
    Number.isInteger(record.createdAt) && record.createdAt >= t0 && record.createdAt <= Date.now(),
    'createdAt is now',
  )
  const stored = app.db
    .prepare('SELECT created_at, recipients FROM notifications WHERE id = ?')
    .get(personal.out[0]) as {
    created_at: number
    recipients: string
  }
  t.equal(record.createdAt, stored.created_at, 'the createdAt stored')
  t.same(JSON.parse(stored.recipients), ['nurse-a', 'admin-a'], 'addressed as the command said')
  t.same(record, {
    id: personal.out[0],
    createdAt: record.createdAt,
    code: 'new-queue-item',
    type: 'warehouse',
    title: 'Stock arrived',
    body: 'Gloves',
    meta: { queue: 'pharmacy', items: 3 },
    seenBy: [],
    direction: 'outbound',
    facility: 'A',
  })
  t.same((await get(tokens.adminA, personal.out[0] as string)).json().to, ['nurse-a', 'admin-a'])
  t.equal((await get(tokens.readA, personal.out[0] as string)).statusCode, 404, 'not addressed to viewer-a')
  t.equal((await get(tokens.write, personal.out[0] as string)).statusCode, 404, 'not addressed to nurse-all')
})

t.test('bad input exits non-zero with a clear message and posts nothing', async (t) => {
  const database = join(t.testdir(), 'facility.db')
  createDatabase(database)
  const without = (name: string) => {
    const i = required.indexOf(name)
    return [...required.slice(0, i), ...required.slice(i + 2)]
  }
  const cases: [string, string[], RegExp][] = [
    ['missing --title', without('--title'), /required option '--title <text>' not specified/],
    ['missing --body', without('--body'), /required option '--body <text>' not specified/],
    [
      'empty --code',
      [...without('--code'), '--code', ' '],
      /--code <code>' argument ' ' is invalid\. must not be empty/,
    ],
    ['bad --direction', [...required, '--direction', 'sideways'], /Allowed choices are inbound, outbound/],
    [
      'bad --meta JSON',
      [...required, '--meta', '{queue:'],
      /--meta <json>' argument '\{queue:' is invalid\. must be valid JSON/,
    ],
    ['array --meta', [...required, '--meta', '[1,2]'], /must be a JSON object/],
    ['null --meta', [...required, '--meta', 'null'], /must be a JSON object/],
    ['infinite --meta number', [...required, '--meta', '{"n":1e400}'], /meta\.n must be a finite number/],
    ['lone surrogate in --meta', [...required, '--meta', '{"q":"\\ud800"}'], /meta\.q is not well-formed Unicode/],
    ['empty --to', [...required, '--to', ''], /--to: account uids must not be empty/],
    ['unknown option', [...required, '--urgent'], /unknown option '--urgent'/],
  ]
  for (const [name, args, message] of cases) {
    const result = await notify(database, args)
    t.not(result.code, 0, `${name}: non-zero exit`)
    t.match(result.err, message, name)
    t.same(result.out, [], `${name}: nothing on stdout`)
  }
  t.equal(countNotifications(database), 0)
})

t.test('the real command, while the service runs on the same file: a polling client sees it at once', async (t) => {
  const database = join(t.testdir(), 'running.db')
  const { app, tokens } = await buildTestApp(t, { DATABASE_PATH: database })
  const unseen = async () =>
    (await app.inject({ url: '/notifications/unseen-count', headers: bearer(tokens.readA) })).json().count
  t.equal(await unseen(), 0)
  const { stdout } = await promisify(execFile)(process.execPath, [
    '--import=tsx',
    'cli.ts',
    '--database',
    database,
    'notify',
    ...required,
    '--facility',
    'A',
  ])
  const id = stdout.trim()
  t.match(id, /^[0-9a-f]{24}$/, 'the id alone on stdout')
  t.equal(await unseen(), 1, 'the next poll counts it')
  const listed = await app.inject({ url: '/notifications?$unseen=true', headers: bearer(tokens.readA) })
  t.same(
    listed.json().notifications.map((n: { id: string }) => n.id),
    [id],
  )
  const other = await app.inject({ url: '/notifications/unseen-count', headers: bearer(tokens.writeB) })
  t.same(other.json(), { count: 0 }, 'another facility does not see it')
})
