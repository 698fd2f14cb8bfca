import t from 'tap'
import { buildTestApp } from '../helper.js'
import { client, intake } from './form-templates-helper.js'

t.test('facility comes from the token; an unbound token may name one', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  t.match((await client(app, tokens.write).post({ ...intake, facility: 'C' })).json(), { facility: 'C' })
  t.match((await client(app, tokens.writeA).post(intake)).json(), { facility: 'A' })
  t.equal((await client(app, tokens.writeA).post({ ...intake, facility: 'A' })).statusCode, 200)
  const other = await client(app, tokens.writeA).post({ ...intake, facility: 'B' })
  t.equal(other.statusCode, 403)
  t.match(other.json(), { code: 'FACILITY_FORBIDDEN', message: /bound to facility A/ })
  t.equal((await client(app, tokens.read).list('facility=B')).json().total, 0, 'the refused create wrote nothing')
})

t.test('facility isolation on every endpoint', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const record = (await client(app, tokens.writeB).post(intake)).json()
  const a = client(app, tokens.writeA)
  for (const c of [a, client(app, tokens.readA), client(app, tokens.adminA)]) {
    const got = await c.get(record.id)
    t.equal(got.statusCode, 404)
    t.equal(got.json().message, `form template ${record.id} not found`, 'the same answer as for an unknown id')
    t.equal((await c.list()).json().total, 0)
    t.equal((await c.list('facility=B')).json().total, 0, 'filtering for B does not widen the scope')
    t.equal((await c.list('tags=vitals')).json().total, 0, 'nor does a tag filter')
    t.equal((await c.list('$or[0][facility]=B&$or[1][type]=intake')).json().total, 0)
  }
  t.equal((await a.patch(record.id, { name: 'taken over' })).statusCode, 404)
  t.equal((await a.patch(record.id, { hide: true })).statusCode, 404)
  t.equal((await a.patch(record.id, { facility: 'A' })).statusCode, 404)
  t.equal((await client(app, tokens.adminA).patch(record.id, { name: 'x' })).statusCode, 404)
  t.equal((await a.remove(record.id)).statusCode, 404)
  t.equal((await a.remove(record.id, { 'if-match': '"1"' })).statusCode, 404, '404 before 412: nothing revealed')

  const fromB = await client(app, tokens.writeB).get(record.id)
  t.same(fromB.json(), record, 'B was not changed')
  t.equal(fromB.headers.etag, '"1"')
  t.equal((await client(app, tokens.read).list()).json().total, 1, 'an unbound token sees every facility')
  t.equal(app.audit.list({ resource: 'form-templates', limit: 100 }).length, 1, 'only the create was audited')
})
