import { join } from 'node:path'
import t from 'tap'
import { runCli } from '../../cli/run.js'
import { openDatabase } from '../../db/connection.js'
import { createReadLog } from '../../db/repositories/read-log.js'
import { bearer, buildTestApp, type TestApp } from '../helper.js'

const PATIENT = 'patient-77q'
const admit = { encounter: 'enc-1', bed: 'B-1', occupiedBy: PATIENT }

async function reads(app: TestApp, token: string, query = '') {
  // No waiting: an answer leaves only once its entry is stored.
  const res = await app.inject({ url: `/audit?kind=reads${query}`, headers: bearer(token) })
  if (res.statusCode !== 200) throw new Error(res.body)
  return res.json().entries as Record<string, unknown>[]
}

async function create(app: TestApp, token: string, url: string, payload: object): Promise<string> {
  const res = await app.inject({ method: 'POST', url, headers: bearer(token), payload })
  if (res.statusCode !== 200) throw new Error(res.body)
  return res.json().id
}

t.test('off by default: reads leave no entry', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const id = await create(app, tokens.writeA, '/ward-occupants', admit)
  t.equal((await app.inject({ url: `/ward-occupants/${id}`, headers: bearer(tokens.readA) })).statusCode, 200)
  t.same(await reads(app, tokens.admin), [])
  t.equal(app.db.prepare('SELECT count(*) FROM read_log').pluck().get(), 0)
})

t.test('a get, a list and a render each leave their entry, with filter names only', async (t) => {
  const { app, tokens } = await buildTestApp(t, { AUDIT_READS: true })
  const occupant = await create(app, tokens.writeA, '/ward-occupants', admit)
  const template = await create(app, tokens.writeA, '/form-templates', { type: 'intake', template: 'p= name' })
  const get = (url: string) => app.inject({ url, headers: bearer(tokens.readA) })
  t.equal((await get(`/ward-occupants/${occupant}`)).statusCode, 200)
  t.equal((await get(`/ward-occupants?occupiedBy=${PATIENT}&dischargedAt=null`)).statusCode, 200)
  t.equal((await get(`/form-templates/${template}/render`)).statusCode, 200)
  const withData = await app.inject({
    method: 'POST',
    url: `/form-templates/${template}/render`,
    headers: bearer(tokens.readA),
    payload: { data: { patient: PATIENT } },
  })
  t.equal(withData.statusCode, 200)
  t.equal((await get(`/form-templates/${template}`)).statusCode, 200)
  t.equal((await get('/notifications')).statusCode, 200)

  const entries = await reads(app, tokens.admin)
  const readA = app.tokens.check(tokens.readA)
  t.ok(readA.ok)
  const who = { kind: 'read', account: 'viewer-a', tokenId: readA.ok ? readA.principal.tokenId : '', facility: 'A' }
  t.match(entries, [
    {
      ...who,
      resource: 'ward-occupants',
      operation: 'get',
      route: 'GET /ward-occupants/:id',
      status: 200,
      recordId: occupant,
      filters: null,
      total: null,
    },
    {
      ...who,
      resource: 'ward-occupants',
      operation: 'list',
      route: 'GET /ward-occupants',
      status: 200,
      recordId: null,
      filters: ['occupiedBy', 'dischargedAt'],
      total: 1,
    },
    {
      ...who,
      resource: 'form-templates',
      operation: 'render',
      route: 'GET /form-templates/:id/render',
      recordId: template,
    },
    {
      ...who,
      resource: 'form-templates',
      operation: 'render',
      route: 'POST /form-templates/:id/render',
      recordId: template,
    },
    { ...who, resource: 'form-templates', operation: 'get', recordId: template },
    // The admission's own notification.
    { ...who, resource: 'notifications', operation: 'list', filters: [], total: 1 },
  ])
  t.equal(entries.length, 6, 'one entry per read; the writes are in the change log, not here')
  for (const entry of entries) t.type(entry.at, 'number')
  const stored = JSON.stringify(app.db.prepare('SELECT * FROM read_log').all())
  t.notOk(stored.includes(PATIENT), 'no filter value or caller data is stored')

  const byRecord = await reads(app, tokens.admin, `&recordId=${occupant}`)
  t.equal(byRecord.length, 1, 'who read this record: one entry')
  t.equal((await reads(app, tokens.admin, '&account=nurse-a')).length, 0, 'filter by account')
  const changes = (await app.inject({ url: '/audit', headers: bearer(tokens.admin) })).json().entries
  t.ok(changes.length >= 2 && changes.every((e: { kind: string }) => e.kind === 'change'), 'changes by default')
})

t.test('the beds of a facility (their occupants name patients) are a read like any list', async (t) => {
  const { app, tokens } = await buildTestApp(t, { AUDIT_READS: true })
  await create(app, tokens.writeA, '/ward-occupants', admit)
  t.equal((await app.inject({ url: '/beds?facility=A', headers: bearer(tokens.readA) })).statusCode, 200)
  t.equal((await app.inject({ url: '/beds?facility=B', headers: bearer(tokens.readA) })).statusCode, 403)
  t.match(await reads(app, tokens.admin), [
    { account: 'viewer-a', resource: 'beds', operation: 'list', route: 'GET /beds', status: 200 },
    { account: 'viewer-a', resource: 'beds', route: 'GET /beds', status: 403 },
  ])
  const [entry] = await reads(app, tokens.admin)
  t.same([entry?.filters, entry?.total, entry?.recordId], [['facility'], 1, null], 'filter names and beds listed')
})

t.test('refused reads are logged with their status; failed authentications are not', async (t) => {
  const { app, tokens } = await buildTestApp(t, { AUDIT_READS: true })
  const ofB = await create(app, tokens.writeB, '/ward-occupants', admit)
  t.equal((await app.inject({ url: `/ward-occupants/${ofB}`, headers: bearer(tokens.readA) })).statusCode, 404)
  t.equal((await app.inject({ url: `/ward-occupants/${ofB}` })).statusCode, 401)
  t.match(await reads(app, tokens.admin), [{ account: 'viewer-a', recordId: ofB, status: 404 }])
  t.equal((await reads(app, tokens.admin)).length, 1)
})

t.test("a facility-bound admin sees only its facility's read entries", async (t) => {
  const { app, tokens } = await buildTestApp(t, { AUDIT_READS: true })
  const a = await create(app, tokens.writeA, '/ward-occupants', admit)
  const b = await create(app, tokens.writeB, '/ward-occupants', admit)
  await app.inject({ url: `/ward-occupants/${a}`, headers: bearer(tokens.readA) })
  await app.inject({ url: `/ward-occupants/${b}`, headers: bearer(tokens.writeB) })
  await app.inject({ url: `/ward-occupants/${b}`, headers: bearer(tokens.read) })
  const forA = await reads(app, tokens.adminA)
  t.same(
    forA.map((e) => [e.account, e.recordId]),
    [['viewer-a', a]],
    'only the reads by tokens of A',
  )
  const all = await reads(app, tokens.admin)
  t.equal(all.length, 3, 'an admin without a facility sees every read')
  t.equal((await app.inject({ url: '/audit?kind=reads', headers: bearer(tokens.readA) })).statusCode, 403)
  t.equal((await app.inject({ url: '/audit?kind=everything', headers: bearer(tokens.admin) })).statusCode, 400)
})

t.test('the CLI prints the read log; entries queued at shutdown are written; old ones are pruned', async (t) => {
  const path = join(t.testdir(), 'reads.db')
  const first = await buildTestApp(t, { AUDIT_READS: true, DATABASE_PATH: path })
  const id = await create(first.app, first.tokens.writeA, '/ward-occupants', admit)
  await first.app.inject({ url: `/ward-occupants/${id}`, headers: bearer(first.tokens.readA) })
  await first.app.close()

  const out: string[] = []
  const io = { out: (l: string) => out.push(l), err: () => {} }
  t.equal(await runCli(['--database', path, 'audit', '--kind', 'reads', '--id', id], io), 0)
  t.match(
    out.map((l) => JSON.parse(l)),
    [{ kind: 'read', account: 'viewer-a', recordId: id }],
  )
  out.length = 0
  t.equal(await runCli(['--database', path, 'audit', '--id', id], io), 0)
  t.match(
    out.map((l) => JSON.parse(l)),
    [{ kind: 'change', operation: 'create' }],
    'changes by default',
  )
  t.not(await runCli(['--database', path, 'audit', '--kind', 'nope'], { out: () => {}, err: () => {} }), 0)

  // An entry from long ago, and the one just written: a start with 1 day of retention prunes the old.
  const db = openDatabase(path)
  createReadLog(db).append(
    {
      account: 'old',
      tokenId: 'x',
      facility: null,
      resource: 'ward-occupants',
      operation: 'get',
      route: 'GET /ward-occupants/:id',
      status: 200,
      recordId: id,
      filters: null,
      total: null,
    },
    Date.now() - 3 * 86_400_000,
  )
  db.close()
  const second = await buildTestApp(t, { AUDIT_READS: true, AUDIT_READS_RETENTION_DAYS: 1, DATABASE_PATH: path })
  const left = second.app.db.prepare('SELECT account FROM read_log ORDER BY seq').pluck().all()
  t.same(left, ['viewer-a'], 'the entry older than the retention is gone, the recent one kept')
})
