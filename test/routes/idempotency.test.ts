import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { buildTestApp } from '../helper.js'
import { until } from '../reliability/fault-helpers.js'
import { type Call, caller, footprint, writeCases } from './idempotency-cases.js'

t.test('a retry with the same key gets the first answer and changes nothing again, on every write route', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const call = caller(app, tokens.write)
  const plain: Call = async (method, url, payload) => {
    const res = await call(method, url, payload)
    return { status: res.statusCode, body: res.body }
  }
  for (const c of writeCases(app.db)) {
    const url = await c.prepare(plain)
    const before = footprint(app.db)
    const first = await call(c.method, url, c.payload, `key-${c.name.replace(/\W+/g, '-')}`)
    t.equal(first.statusCode, 200, `${c.name}: done`)
    const changed = footprint(app.db)
    t.notSame(changed, before, `${c.name}: the first request changed something`)
    const again = await call(c.method, url, c.payload, `key-${c.name.replace(/\W+/g, '-')}`)
    t.equal(again.statusCode, first.statusCode, `${c.name}: same status`)
    t.equal(again.body, first.body, `${c.name}: same body`)
    t.equal(again.headers.etag, first.headers.etag, `${c.name}: same ETag`)
    t.equal(again.headers['content-type'], first.headers['content-type'])
    t.equal(again.headers['idempotent-replayed'], 'true', `${c.name}: says it is a replay`)
    t.equal(first.headers['idempotent-replayed'], undefined)
    t.same(footprint(app.db), changed, `${c.name}: no second change, audit entry or feed event`)
  }
})

t.test('the same key with another body, path or method is a 422; keys are per token', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const call = caller(app, tokens.write)
  const body = { encounter: 'e-1', bed: 'B-1', occupiedBy: 'p' }
  t.equal((await call('POST', '/ward-occupants', body, 'k1')).statusCode, 200)
  const reordered = await call('POST', '/ward-occupants', { occupiedBy: 'p', bed: 'B-1', encounter: 'e-1' }, 'k1')
  t.equal(reordered.headers['idempotent-replayed'], 'true', 'equal as parsed JSON: the same request')
  const before = footprint(app.db)
  for (const [method, url, payload] of [
    ['POST', '/ward-occupants', { ...body, bed: 'B-2' }],
    ['POST', '/form-templates', { type: 'x' }],
  ] as const) {
    const res = await call(method, url, payload, 'k1')
    t.equal(res.statusCode, 422)
    t.match(res.json(), { code: 'IDEMPOTENCY_KEY_REUSED', error: 'Unprocessable Entity' })
  }
  t.same(footprint(app.db), before, 'nothing changed')
  const other = await caller(app, tokens.admin)('POST', '/ward-occupants', { ...body, bed: 'B-3' }, 'k1')
  t.equal(other.statusCode, 200, "another token's key of the same name is its own")
  t.equal(other.headers['idempotent-replayed'], undefined)
})

t.test('a refusal (4xx) changed nothing and is not stored: the retry runs again', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const call = caller(app, tokens.write)
  const first = await call('POST', '/ward-occupants', { encounter: 'e-1', bed: 'B-1', occupiedBy: 'p' })
  const taken = await call('POST', '/ward-occupants', { encounter: 'e-2', bed: 'B-1', occupiedBy: 'q' }, 'k409')
  t.equal(taken.statusCode, 409)
  t.equal(taken.json().code, 'BED_OCCUPIED')
  t.equal(app.db.prepare('SELECT count(*) FROM idempotency_keys').pluck().get(), 0, 'nothing kept for the 409')
  await call('PATCH', `/ward-occupants/${first.json().id}`, { discharge: true })
  const retry = await call('POST', '/ward-occupants', { encounter: 'e-2', bed: 'B-1', occupiedBy: 'q' }, 'k409')
  t.equal(retry.statusCode, 200, 'the bed is free now: the retry admits, once')
  t.equal(retry.headers['idempotent-replayed'], undefined)
  const again = await call('POST', '/ward-occupants', { encounter: 'e-2', bed: 'B-1', occupiedBy: 'q' }, 'k409')
  t.equal(again.headers['idempotent-replayed'], 'true', 'and that change is what the key now stands for')
  t.equal(again.body, retry.body)
  t.equal(footprint(app.db).occupants, 2)
  const missing = await call('DELETE', `/ward-occupants/${'0'.repeat(24)}`, undefined, 'k404')
  t.equal(missing.statusCode, 404)
  const missingAgain = await call('DELETE', `/ward-occupants/${'0'.repeat(24)}`, undefined, 'k404')
  t.equal(missingAgain.statusCode, 404)
  t.equal(missingAgain.headers['idempotent-replayed'], undefined, 'a 404 is looked up again, not replayed')
})

t.test("a bad key is a 400 naming the header; a quoted key (the draft's form) is the same key", async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const call = caller(app, tokens.write)
  const body = { type: 'intake' }
  for (const bad of ['', 'a'.repeat(256), 'two words', 'a,b', 'quote"inside', 'back\\slash', 'é']) {
    const res = await call('POST', '/form-templates', body, bad)
    t.equal(res.statusCode, 400, JSON.stringify(bad))
    t.match(res.json(), { code: 'FST_ERR_VALIDATION', message: /idempotency-key/ })
  }
  t.equal(footprint(app.db).templates, 0, 'nothing was created')
  const uuid = '5b0f2a6e-8c1d-4f7e-9a3b-2c4d6e8f0a1b'
  const quoted = await call('POST', '/form-templates', body, `"${uuid}"`)
  t.equal(quoted.statusCode, 200)
  const bare = await call('POST', '/form-templates', body, uuid)
  t.equal(bare.headers['idempotent-replayed'], 'true')
  t.equal((await call('POST', '/form-templates', body, 'k'.repeat(255))).statusCode, 200, '255 characters is fine')
})

t.test('rendering and stream tickets take the header but store nothing', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const call = caller(app, tokens.write)
  const tickets = [
    await call('POST', '/events/tickets', undefined, 't1'),
    await call('POST', '/events/tickets', undefined, 't1'),
  ]
  t.same(
    tickets.map((r) => r.statusCode),
    [200, 200],
  )
  t.not(tickets[0]?.json().ticket, tickets[1]?.json().ticket, 'a retry gets a new ticket; none is kept')
  t.equal((await call('POST', '/events/tickets', undefined, 'bad key')).statusCode, 400)
  const template = await call('POST', '/form-templates', { type: 'x', template: 'p= type' })
  const url = `/form-templates/${template.json().id}/render`
  const rendered = await call('POST', url, { data: {} }, 'r1')
  t.equal(rendered.statusCode, 200)
  t.equal(rendered.body, '<p>x</p>')
  t.equal((await call('POST', url, { data: { other: 1 } }, 'r1')).statusCode, 200, 'not stored, so never a 422')
  t.equal(app.db.prepare('SELECT count(*) FROM idempotency_keys').pluck().get(), 0)
})

t.test('a retry while the first request is still in flight is a 409 with Retry-After', async (t) => {
  const path = join(t.testdir(), 'inflight.db')
  const { app, tokens } = await buildTestApp(t, { DATABASE_PATH: path })
  const call = caller(app, tokens.write)
  const body = { encounter: 'e-1', bed: 'B-1', occupiedBy: 'p' }
  const lock = new BetterSqlite3(path)
  t.teardown(() => lock.close())
  lock.exec('BEGIN IMMEDIATE') // keeps the first request waiting, without any timing
  const first = call('POST', '/ward-occupants', body, 'dup')
  await until(() => app.writes.waitingSince !== null)
  const second = await call('POST', '/ward-occupants', body, 'dup')
  t.equal(second.statusCode, 409)
  t.match(second.json(), { code: 'IDEMPOTENCY_KEY_IN_FLIGHT' })
  t.equal(second.headers['retry-after'], '1')
  lock.exec('COMMIT')
  const done = await first
  t.equal(done.statusCode, 200)
  const third = await call('POST', '/ward-occupants', body, 'dup')
  t.equal(third.body, done.body, 'once done, the retry gets its answer')
  t.equal(footprint(app.db).occupants, 1)
})

t.test('keys expire after IDEMPOTENCY_KEY_TTL_HOURS and are deleted', async (t) => {
  const path = join(t.testdir(), 'ttl.db')
  const first = await buildTestApp(t, { DATABASE_PATH: path, IDEMPOTENCY_KEY_TTL_HOURS: 2 })
  const call = caller(first.app, first.tokens.write)
  t.equal((await call('POST', '/form-templates', { type: 'a' }, 'old')).statusCode, 200)
  t.equal((await call('POST', '/form-templates', { type: 'b' }, 'young')).statusCode, 200)
  const hour = 3_600_000
  first.app.db.prepare(`UPDATE idempotency_keys SET created_at = created_at - ? WHERE key = 'old'`).run(2 * hour + 1)
  const renewed = await call('POST', '/form-templates', { type: 'a2' }, 'old')
  t.equal(renewed.statusCode, 200, 'an expired key is a new key: another body is fine')
  t.equal(renewed.headers['idempotent-replayed'], undefined)
  t.equal((await call('POST', '/form-templates', { type: 'b' }, 'young')).headers['idempotent-replayed'], 'true')

  first.app.db.prepare(`UPDATE idempotency_keys SET created_at = created_at - ? WHERE key = 'young'`).run(3 * hour)
  await first.app.close()
  // Cleanup runs at start (and every hour): the expired row is gone from the file.
  const second = await buildTestApp(t, { DATABASE_PATH: path, IDEMPOTENCY_KEY_TTL_HOURS: 2 })
  t.same(second.app.db.prepare('SELECT key FROM idempotency_keys').pluck().all(), ['old'])
})

t.test('the OpenAPI document shows the header on every POST, PATCH and DELETE, and on no GET', async (t) => {
  const { app } = await buildTestApp(t)
  const doc = (await app.inject('/openapi.json')).json()
  let writes = 0
  for (const [path, operations] of Object.entries(
    doc.paths as Record<string, Record<string, { parameters?: { in: string; name: string }[] }>>,
  )) {
    for (const [method, operation] of Object.entries(operations)) {
      const has = (operation.parameters ?? []).some((p) => p.in === 'header' && p.name === 'idempotency-key')
      if (method === 'get') t.notOk(has, `GET ${path}`)
      else {
        writes++
        t.ok(has, `${method.toUpperCase()} ${path}`)
      }
    }
  }
  t.equal(writes, 12, 'every non-GET route (PUT /beds/:bed/state the twelfth)')
})
