import { join } from 'node:path'
import t from 'tap'
import { buildApp } from '../../app.js'
import { defaultConfig } from '../../config.js'
import { bearer, buildTestApp, type TestApp } from '../helper.js'

const admit = { encounter: 'enc-1', bed: 'B-1', occupiedBy: 'patient-1' }

function client(app: TestApp, token: string) {
  return {
    post: (payload: unknown) =>
      app.inject({ method: 'POST', url: '/ward-occupants', headers: bearer(token), payload: payload as object }),
    get: (id: string) => app.inject({ url: `/ward-occupants/${id}`, headers: bearer(token) }),
    list: (query = '') => app.inject({ url: `/ward-occupants?${query}`, headers: bearer(token) }),
    patch: (id: string, payload: unknown, headers: Record<string, string> = {}) =>
      app.inject({
        method: 'PATCH',
        url: `/ward-occupants/${id}`,
        headers: { ...bearer(token), ...headers },
        payload: payload as object,
      }),
    remove: (id: string, headers: Record<string, string> = {}) =>
      app.inject({ method: 'DELETE', url: `/ward-occupants/${id}`, headers: { ...bearer(token), ...headers } }),
  }
}

t.test('admit: defaults, server-owned fields and the ETag', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const before = Date.now()
  const res = await client(app, tokens.writeA).post({ ...admit, room: 'R-1', provider: 'dr-1' })
  t.equal(res.statusCode, 200)
  const record = res.json()
  t.match(record, { ...admit, room: 'R-1', provider: 'dr-1', facility: 'A', createdBy: 'nurse-a' })
  t.match(record.id, /^[0-9a-f]{24}$/)
  t.ok(record.createdAt >= before && record.createdAt <= Date.now(), 'createdAt defaults to now')
  t.equal(record.occupiedAt, record.createdAt, 'occupiedAt defaults to now')
  t.notOk('dischargedAt' in record, 'absent fields are omitted, not null')
  t.equal(res.headers.etag, '"1"')
  const explicit = await client(app, tokens.writeA).post({ ...admit, bed: 'B-2', createdAt: 1000, occupiedAt: 2000 })
  t.match(explicit.json(), { createdAt: 1000, occupiedAt: 2000 })
  const fetched = await client(app, tokens.readA).get(record.id)
  t.same(fetched.json(), record)
  t.equal(fetched.headers.etag, '"1"')
})

t.test('facility comes from the token; an unbound token may name one', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  t.match((await client(app, tokens.write).post({ ...admit, facility: 'C' })).json(), { facility: 'C' })
  t.notOk('facility' in (await client(app, tokens.write).post({ ...admit, bed: 'B-9' })).json())
  t.equal((await client(app, tokens.writeA).post({ ...admit, bed: 'B-5', facility: 'A' })).statusCode, 200)
  const other = await client(app, tokens.writeA).post({ ...admit, bed: 'B-6', facility: 'B' })
  t.equal(other.statusCode, 403)
  t.match(other.json(), { code: 'FACILITY_FORBIDDEN' })
})

t.test('bad bodies are refused with 400 and change nothing', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const c = client(app, tokens.write)
  const bodies: [string, unknown, RegExp][] = [
    ['missing encounter', { bed: 'B', occupiedBy: 'p' }, /must have property 'encounter'/],
    ['missing bed', { encounter: 'e', occupiedBy: 'p' }, /must have property 'bed'/],
    ['missing occupiedBy', { encounter: 'e', bed: 'B' }, /must have property 'occupiedBy'/],
    ['empty bed', { ...admit, bed: '' }, /body\.bed must NOT have fewer than 1 characters/],
    ['number bed', { ...admit, bed: 12 }, /body\.bed must be string/],
    ['null bed', { ...admit, bed: null }, /body\.bed must be string/],
    ['empty encounter', { ...admit, encounter: '' }, /body\.encounter must NOT have fewer than 1 characters/],
    ['number encounter', { ...admit, encounter: 7 }, /body\.encounter must be string/],
    ['empty occupiedBy', { ...admit, occupiedBy: '' }, /body\.occupiedBy must NOT have fewer than 1 characters/],
    ['object occupiedBy', { ...admit, occupiedBy: { uid: 'p' } }, /body\.occupiedBy must be string/],
    ['number room', { ...admit, room: 3 }, /body\.room must be string/],
    ['boolean provider', { ...admit, provider: true }, /body\.provider must be string/],
    ['string timestamp', { ...admit, createdAt: '1000' }, /body\.createdAt must be integer/],
    ['fractional timestamp', { ...admit, occupiedAt: 1.5 }, /body\.occupiedAt must be integer/],
    ['negative timestamp', { ...admit, occupiedAt: -1 }, /body\.occupiedAt must be >= 0/],
    ['typo', { ...admit, ocupiedBy: 'p' }, /unknown property 'ocupiedBy'/],
    ['id', { ...admit, id: 'aaaaaaaaaaaaaaaaaaaaaaaa' }, /unknown property 'id'/],
    ['createdBy', { ...admit, createdBy: 'someone' }, /unknown property 'createdBy'/],
    ['dischargedAt', { ...admit, dischargedAt: 1 }, /unknown property 'dischargedAt'/],
    ['dischargedBy', { ...admit, dischargedBy: 'x' }, /unknown property 'dischargedBy'/],
    ['discharge on create', { ...admit, discharge: true }, /unknown property 'discharge'/],
    ['over-long', { ...admit, encounter: 'e'.repeat(201) }, /must NOT have more than 200 characters/],
    ['not an object', [admit], /body must be object/],
  ]
  for (const [name, body, message] of bodies) {
    const res = await c.post(body)
    t.equal(res.statusCode, 400, name)
    t.match(res.json(), { code: 'FST_ERR_VALIDATION', message }, `${name}: message`)
  }
  t.equal((await c.list()).json().total, 0, 'nothing was written')
  t.equal(app.audit.list({ limit: 10 }).length, 0, 'nothing was audited')
})

t.test('bad ids are 404, never 500', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const c = client(app, tokens.write)
  for (const id of ['000000000000000000000000', 'nope', "x' OR 1=1", '%00', 'a'.repeat(64)]) {
    const encoded = encodeURIComponent(id)
    t.equal((await c.get(encoded)).statusCode, 404, `get ${id}`)
    t.equal((await c.patch(encoded, { provider: 'x' })).statusCode, 404, `patch ${id}`)
    t.equal((await c.remove(encoded)).statusCode, 404, `delete ${id}`)
  }
  t.equal((await c.get('a'.repeat(65))).statusCode, 400, 'an over-long id is invalid')
  t.match((await c.get('000000000000000000000000')).json(), { code: 'NOT_FOUND' })
})

t.test('one bed, one active occupant', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const a = client(app, tokens.writeA)
  const first = (await a.post(admit)).json()
  const clash = await a.post({ ...admit, occupiedBy: 'patient-2' })
  t.equal(clash.statusCode, 409)
  t.match(clash.json(), { statusCode: 409, error: 'Conflict', code: 'BED_OCCUPIED', message: new RegExp(first.id) })
  t.equal((await client(app, tokens.writeB).post(admit)).statusCode, 200, 'the same bed name in another facility')
  t.equal((await a.patch(first.id, { discharge: true })).statusCode, 200)
  t.equal((await a.post({ ...admit, occupiedBy: 'patient-2' })).statusCode, 200, 'free again after discharge')
  t.equal((await a.list('bed=B-1&dischargedAt=null')).json().total, 1, 'one active occupant')
})

t.test('BED_POLICY=shared lets a ward share beds', async (t) => {
  const { app, tokens } = await buildTestApp(t, { BED_POLICY: 'shared' })
  const a = client(app, tokens.writeA)
  t.equal((await a.post(admit)).statusCode, 200)
  t.equal((await a.post({ ...admit, occupiedBy: 'patient-2' })).statusCode, 200)
  t.equal((await a.list('bed=B-1&dischargedAt=null')).json().total, 2)
})

t.test('back to BED_POLICY=exclusive refuses to start while a bed has two active occupants', async (t) => {
  const dir = t.testdir({})
  const DATABASE_PATH = join(dir, 'ward.db')
  const shared = await buildApp(defaultConfig({ DATABASE_PATH, LOG_LEVEL: 'silent', BED_POLICY: 'shared' }))
  const token = shared.tokens.create({ account: 'nurse', role: 'write', facility: 'A', label: 'test' }).token
  const a = client(shared, token)
  const first = (await a.post(admit)).json()
  t.equal((await a.post({ ...admit, occupiedBy: 'patient-2' })).statusCode, 200, 'shared: two in one bed')
  await shared.close()

  const exclusive = defaultConfig({ DATABASE_PATH, LOG_LEVEL: 'silent', BED_POLICY: 'exclusive' })
  await t.rejects(
    buildApp(exclusive),
    /BED_POLICY=exclusive cannot be enforced: bed B-1 of facility A has more than one active occupant/,
  )

  // Discharging the extra occupant (still shared) lets exclusive start and hold the rule again.
  const again = await buildApp(defaultConfig({ DATABASE_PATH, LOG_LEVEL: 'silent', BED_POLICY: 'shared' }))
  t.equal((await client(again, token).patch(first.id, { discharge: true })).statusCode, 200)
  await again.close()
  const strict = await buildApp(exclusive)
  t.teardown(() => strict.close())
  const clash = await client(strict, token).post({ ...admit, occupiedBy: 'patient-3' })
  t.equal(clash.statusCode, 409, 'exclusive again: the bed is taken')
})

t.test('discharge and re-open', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const a = client(app, tokens.writeA)
  const record = (await a.post(admit)).json()

  const unchanged = await a.patch(record.id, { discharge: false })
  t.same(unchanged.json(), record, 'discharge: false on an active record changes nothing')
  t.equal(unchanged.headers.etag, '"1"')

  const discharged = await a.patch(record.id, { discharge: true })
  t.equal(discharged.statusCode, 200)
  t.match(discharged.json(), { dischargedBy: 'nurse-a', dischargedAt: Number })
  t.equal(discharged.headers.etag, '"2"')

  const again = await a.patch(record.id, { discharge: true, provider: 'dr-x' })
  t.equal(again.statusCode, 409)
  t.match(again.json(), { code: 'ALREADY_DISCHARGED' })
  t.same((await a.get(record.id)).json(), discharged.json(), 'the refused patch changed nothing')

  const reopened = await a.patch(record.id, { discharge: false })
  t.equal(reopened.statusCode, 200)
  t.notOk('dischargedAt' in reopened.json() || 'dischargedBy' in reopened.json(), 'both fields cleared')

  await a.patch(record.id, { discharge: true })
  const newcomer = (await a.post({ ...admit, occupiedBy: 'patient-2' })).json()
  const blocked = await a.patch(record.id, { discharge: false })
  t.equal(blocked.statusCode, 409)
  t.match(blocked.json(), { code: 'BED_OCCUPIED', message: new RegExp(newcomer.id) })
  t.match((await a.get(record.id)).json(), { dischargedAt: Number }, 'still discharged')
})

t.test('patch: provider, empty patch, bad patches', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const a = client(app, tokens.writeA)
  const record = (await a.post(admit)).json()
  t.match((await a.patch(record.id, { provider: 'dr-2' })).json(), { provider: 'dr-2' })
  t.match((await a.patch(record.id, {})).json(), { provider: 'dr-2' }, 'an empty patch changes nothing')
  const bad: [unknown, RegExp][] = [
    [{ discharge: 'yes' }, /body\.discharge must be boolean/],
    [{ discharge: 1 }, /body\.discharge must be boolean/],
    [{ provider: '' }, /fewer than 1/],
    [{ bed: 'B-2' }, /unknown property 'bed'/],
    [{ dischargedAt: 5 }, /unknown property 'dischargedAt'/],
  ]
  for (const [body, message] of bad) {
    const res = await a.patch(record.id, body)
    t.equal(res.statusCode, 400, JSON.stringify(body))
    t.match(res.json().message, message)
  }
})

t.test('If-Match guards patch and delete', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const a = client(app, tokens.writeA)
  const record = (await a.post(admit)).json()
  await a.patch(record.id, { provider: 'dr-2' })
  const stale = await a.patch(record.id, { provider: 'dr-3' }, { 'if-match': '"1"' })
  t.equal(stale.statusCode, 412)
  t.match(stale.json(), { code: 'PRECONDITION_FAILED' })
  t.equal((await a.remove(record.id, { 'if-match': '"1"' })).statusCode, 412)
  t.equal((await a.patch(record.id, { provider: 'dr-3' }, { 'if-match': '"2"' })).statusCode, 200)
  t.equal((await a.patch(record.id, { provider: 'dr-4' }, { 'if-match': '*' })).statusCode, 200)
  t.equal((await a.remove(record.id, { 'if-match': '"9", "4"' })).statusCode, 200)
})

t.test('delete returns the record; the audit log keeps every change', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const a = client(app, tokens.writeA)
  const record = (await a.post(admit)).json()
  const discharged = (await a.patch(record.id, { discharge: true })).json()
  const removed = await a.remove(record.id)
  t.same(removed.json(), discharged)
  t.equal((await a.get(record.id)).statusCode, 404)
  const entries = app.audit.list({ resource: 'ward-occupants', recordId: record.id, limit: 10 })
  t.same(
    entries.map((e) => e.operation),
    ['create', 'patch', 'delete'],
  )
  t.match(entries[0], { account: 'nurse-a', facility: 'A', before: null, after: record })
  t.match(entries[1], { before: record, after: discharged })
  t.match(entries[2], { before: discharged, after: null }, 'the deleted record stays recoverable')
  t.ok(entries.every((e) => typeof e.tokenId === 'string'))
  const viaHttp = await app.inject({
    url: `/audit?resource=ward-occupants&recordId=${record.id}`,
    headers: bearer(tokens.adminA),
  })
  t.equal(viaHttp.json().entries.length, 3)
})

t.test('events for the notifications: occupied, discharged, reopened', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const seen: string[] = []
  app.events.on('ward-occupant', (e) => seen.push(`${e.type}:${e.occupant.bed}:${e.actor.account}`))
  const a = client(app, tokens.writeA)
  const record = (await a.post(admit)).json()
  await a.patch(record.id, { discharge: true })
  await a.patch(record.id, { discharge: false })
  t.same(seen, ['occupied:B-1:nurse-a', 'discharged:B-1:nurse-a', 'reopened:B-1:nurse-a'])
})

t.test('facility isolation on every endpoint', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const record = (await client(app, tokens.writeB).post(admit)).json()
  const a = client(app, tokens.writeA)
  t.equal((await a.get(record.id)).statusCode, 404)
  t.equal((await client(app, tokens.readA).get(record.id)).statusCode, 404)
  t.equal((await a.patch(record.id, { discharge: true })).statusCode, 404)
  t.equal((await a.remove(record.id)).statusCode, 404)
  t.equal((await a.list()).json().total, 0)
  t.equal((await a.list('facility=B')).json().total, 0, 'filtering for B does not widen the scope')
  t.equal((await a.list('$or[0][facility]=B&$or[1][bed]=B-1')).json().total, 0)
  t.equal((await client(app, tokens.read).list()).json().total, 1, 'an unbound token sees every facility')
  t.notOk((await client(app, tokens.writeB).get(record.id)).json().dischargedAt, 'B was not changed')
  const forA = await app.inject({ url: '/audit', headers: bearer(tokens.adminA) })
  t.equal(forA.json().entries.length, 0, 'a facility admin reads only its audit entries')
})
