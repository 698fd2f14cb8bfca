import t from 'tap'
import { bearer, buildTestApp } from '../helper.js'
import { client, intake } from './form-templates-helper.js'

t.test('create: defaults, server-owned fields, item ids and the ETag', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const before = Date.now()
  const res = await client(app, tokens.writeA).post(intake)
  t.equal(res.statusCode, 200)
  t.equal(res.headers.etag, '"1"')
  const record = res.json()
  t.match(record, { type: 'intake', subtype: 'adult', name: 'Admission intake', facility: 'A', createdBy: 'nurse-a' })
  t.match(record.id, /^[0-9a-f]{24}$/)
  t.ok(record.createdAt >= before && record.createdAt <= Date.now(), 'createdAt defaults to now')
  t.same(record.tags, intake.tags)
  for (const name of ['description', 'template', 'meta', 'config', 'hiddenAt', 'hiddenBy']) {
    t.notOk(name in record, `absent ${name} is omitted, not null`)
  }

  const items = record.items as Record<string, unknown>[]
  t.same(
    items.map((i) => i.question),
    intake.items.map((i) => i.question),
    "the client's order is kept",
  )
  t.match(items[0], { id: /^[0-9a-f]{24}$/, type: 'trueorfalse', required: true })
  t.match(items[1], { id: 'allergies', set: 'history', choices: ['penicillin', 'latex'] }, 'a client id is kept')
  t.match(items[2], { id: /^[0-9a-f]{24}$/, order: 3, choices: ['none', 'mild', 'severe'] })
  t.not(items[0]?.id, items[2]?.id, 'generated ids differ')

  const fetched = await client(app, tokens.readA).get(record.id)
  t.equal(fetched.statusCode, 200)
  t.same(fetched.json(), record)
  t.equal(fetched.headers.etag, '"1"')
})

t.test('create: every optional field round-trips, free-form objects keep their contents', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const meta = { version: 2, author: { uid: 'dr-1', roles: ['lead'] }, flags: [true, null, 1.5], empty: {} }
  const config = { print: { paper: 'A4', margins: [10, 10, 12, 12] }, 'odd key': 'ü ✓' }
  const body = {
    ...intake,
    createdAt: 1000,
    description: 'Asked at every admission',
    template: 'h1= name\neach item in items\n  p= item.question',
    meta,
    config,
  }
  const record = (await client(app, tokens.write).post(body)).json()
  t.match(record, { createdAt: 1000, description: body.description, template: body.template })
  t.notOk('facility' in record, 'an unbound token naming no facility creates a record without one')
  t.same(record.meta, meta, 'meta is serialized whole')
  t.same(record.config, config, 'config is serialized whole')
  const listed = (await client(app, tokens.read).list()).json().formTemplates[0]
  t.same(listed.meta, meta)
  t.same(listed.config, config)
  const empty = (await client(app, tokens.write).post({ type: 'blank', items: [], tags: [], meta: {} })).json()
  t.same([empty.items, empty.tags, empty.meta], [[], [], {}], 'empty lists and objects are kept as such')
})

t.test('roles and tokens', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const record = (await client(app, tokens.writeA).post(intake)).json()
  const read = client(app, tokens.readA)
  t.equal((await read.post(intake)).statusCode, 403, 'read tokens cannot create')
  t.equal((await read.patch(record.id, { name: 'x' })).statusCode, 403, 'read tokens cannot patch')
  t.equal((await read.remove(record.id)).statusCode, 403, 'read tokens cannot delete')
  t.equal((await read.list()).statusCode, 200)
  const anonymous = await app.inject({ url: '/form-templates' })
  t.equal(anonymous.statusCode, 401)
  t.match(anonymous.headers['www-authenticate'], /^Bearer/)
  const bogus = await app.inject({ url: `/form-templates/${record.id}`, headers: bearer('not-a-token') })
  t.equal(bogus.statusCode, 401)
})

t.test('delete returns the record and removes its tags; the audit log keeps every change', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const a = client(app, tokens.writeA)
  const record = (await a.post(intake)).json()
  const hidden = (await a.patch(record.id, { hide: true })).json()
  const removed = await a.remove(record.id)
  t.equal(removed.statusCode, 200)
  t.same(removed.json(), hidden)
  t.equal((await a.get(record.id)).statusCode, 404)
  t.equal((await a.remove(record.id)).statusCode, 404, 'a second delete is a 404')
  t.equal((await a.list('tags=vitals')).json().total, 0)
  const tags = app.db.prepare('SELECT count(*) AS n FROM form_template_tags WHERE template_id = ?').get(record.id)
  t.same(tags, { n: 0 }, 'the side table has no orphans')

  const entries = app.audit.list({ resource: 'form-templates', limit: 100 })
  t.same(
    entries.map((e) => e.operation),
    ['create', 'patch', 'delete'],
  )
  t.ok(entries.every((e) => e.recordId === record.id && e.account === 'nurse-a' && e.facility === 'A'))
  t.ok(entries.every((e) => typeof e.tokenId === 'string'))
  t.same(entries[0]?.before, null)
  t.same(entries[0]?.after, record)
  t.same(entries[1]?.before, record)
  t.same(entries[1]?.after, hidden)
  t.same(entries[2]?.before, hidden, 'the deleted record stays recoverable')
  t.same(entries[2]?.after, null)
})

t.test('bad ids are 404 (or 400 when over-long), never 500', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const c = client(app, tokens.write)
  for (const id of ['000000000000000000000000', 'nope', "x' OR 1=1", '%00', 'a'.repeat(64)]) {
    const encoded = encodeURIComponent(id)
    t.equal((await c.get(encoded)).statusCode, 404, `get ${id}`)
    t.equal((await c.patch(encoded, { name: 'x' })).statusCode, 404, `patch ${id}`)
    t.equal((await c.remove(encoded)).statusCode, 404, `delete ${id}`)
  }
  t.match((await c.get('000000000000000000000000')).json(), { code: 'NOT_FOUND', message: /form template/ })
  t.equal((await c.get('a'.repeat(65))).statusCode, 400)
  t.equal((await c.patch('a'.repeat(65), { name: 'x' })).statusCode, 400)
  t.equal((await c.remove('a'.repeat(65))).statusCode, 400)
})

t.test('the routes are in the OpenAPI document', async (t) => {
  const { app } = await buildTestApp(t)
  const doc = (await app.inject({ url: '/openapi.json' })).json()
  t.ok(doc.paths['/form-templates'].post && doc.paths['/form-templates'].get)
  t.ok(doc.paths['/form-templates/{id}'].patch && doc.paths['/form-templates/{id}'].delete)
})
