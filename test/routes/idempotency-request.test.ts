import t from 'tap'
import { createNotificationRepository } from '../../db/repositories/notifications.js'
import { bearer, buildTestApp, type TestApp } from '../helper.js'
import { caller, footprint } from './idempotency-cases.js'

/**
 * A key stands for one request: its method, path, If-Match and body. A retry is replayed only when
 * all of them are the same; anything else is a 422 and changes nothing. Each test below is red when
 * one part is left out of the fingerprint (docs/SECURITY.md, "Proofs").
 */

const keys = (app: TestApp) => app.db.prepare('SELECT count(*) FROM idempotency_keys').pluck().get() as number

async function admit(app: TestApp, token: string, bed: string): Promise<{ id: string; etag: string }> {
  const res = await caller(app, token)('POST', '/ward-occupants', { encounter: `e-${bed}`, bed, occupiedBy: 'p' })
  return { id: res.json().id, etag: String(res.headers.etag) }
}

t.test('the key used to discharge X, sent to discharge Y: 422, and Y stays in its bed', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const call = caller(app, tokens.write)
  const x = await admit(app, tokens.write, 'B-1')
  const y = await admit(app, tokens.write, 'B-2')
  t.equal((await call('PATCH', `/ward-occupants/${x.id}`, { discharge: true }, 'k')).statusCode, 200)
  const before = footprint(app.db)
  const other = await call('PATCH', `/ward-occupants/${y.id}`, { discharge: true }, 'k')
  t.equal(other.statusCode, 422, 'the same body on another path is another request')
  t.match(other.json(), { code: 'IDEMPOTENCY_KEY_REUSED' })
  t.equal(other.headers['idempotent-replayed'], undefined, "X's answer is not given for Y")
  t.same(footprint(app.db), before, 'nothing changed')
  t.notOk((await call('GET', `/ward-occupants/${y.id}`)).json().dischargedAt, 'Y is still admitted')
})

t.test('the same path and body with another method: 422', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const call = caller(app, tokens.write)
  const template = (await call('POST', '/form-templates', { type: 'intake' })).json().id
  const url = `/form-templates/${template}`
  t.equal((await call('DELETE', url, {}, 'k')).statusCode, 200, 'a DELETE with an empty JSON body')
  const patch = await call('PATCH', url, {}, 'k')
  t.equal(patch.statusCode, 422, 'a PATCH with the same (empty) body is another request')
  t.match(patch.json(), { code: 'IDEMPOTENCY_KEY_REUSED' })
})

t.test('If-Match is part of the request: after a 412, the retry with the right version is done', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const call = caller(app, tokens.write)
  const x = await admit(app, tokens.write, 'B-1')
  const url = `/ward-occupants/${x.id}`
  const stale = await call('PATCH', url, { discharge: true }, 'k', { 'if-match': '"7"' })
  t.equal(stale.statusCode, 412)
  t.equal(keys(app), 0, 'the 412 changed nothing and is not kept')
  const right = await call('PATCH', url, { discharge: true }, 'k', { 'if-match': x.etag })
  t.equal(right.statusCode, 200, 'the retry with the current version discharges')
  t.ok(right.json().dischargedAt)
  const replayed = await call('PATCH', url, { discharge: true }, 'k', { 'if-match': x.etag })
  t.equal(replayed.headers['idempotent-replayed'], 'true', 'the very same request: replayed')
  t.equal(replayed.body, right.body)
  const before = footprint(app.db)
  for (const ifMatch of [{ 'if-match': '"7"' }, {}] as Record<string, string>[]) {
    const other = await call('PATCH', url, { discharge: true }, 'k', ifMatch)
    t.equal(other.statusCode, 422, `another If-Match (${JSON.stringify(ifMatch)}): not the request that was done`)
    t.equal(other.headers['idempotent-replayed'], undefined)
  }
  t.same(footprint(app.db), before)
})

t.test('a write that changed nothing keeps nothing: a read token cannot fill the table', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const note = createNotificationRepository(app.db).create({
    facility: null,
    code: 'c',
    type: 't',
    title: 'T',
    body: 'B',
  })
  const mark = (key: string) =>
    app.inject({
      method: 'POST',
      url: `/notifications/${note.id}/seen`,
      headers: { ...bearer(tokens.read), 'idempotency-key': key },
    })
  t.equal((await mark('first')).statusCode, 200)
  t.equal(keys(app), 1, 'the mark that changed something is kept')
  for (let i = 0; i < 50; i++) t.equal((await mark(`again-${i}`)).statusCode, 200)
  t.equal(keys(app), 1, 'marking again changes nothing: 50 new keys, no new row')
  for (let i = 0; i < 50; i++) {
    const res = await app.inject({
      method: 'POST',
      url: `/notifications/${'0'.repeat(24)}/seen`,
      headers: { ...bearer(tokens.read), 'idempotency-key': `missing-${i}` },
    })
    t.equal(res.statusCode, 404)
  }
  t.equal(keys(app), 1, '50 refusals, no new row')
  const x = await admit(app, tokens.write, 'B-1')
  const call = caller(app, tokens.write)
  t.equal((await call('PATCH', `/ward-occupants/${x.id}`, { discharge: false }, 'noop')).statusCode, 200)
  t.equal(keys(app), 1, 'a patch to what the record already says keeps nothing either')
})
