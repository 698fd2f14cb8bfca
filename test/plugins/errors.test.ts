import t from 'tap'
import { bearer, buildTestApp } from '../helper.js'

const admit = { encounter: 'enc-1', bed: 'B-1', occupiedBy: 'patient-1' }

t.test('unknown routes answer 404 in the error shape, without a token', async (t) => {
  const { app } = await buildTestApp(t)
  const res = await app.inject({ url: '/no-such-thing?x=1' })
  t.equal(res.statusCode, 404)
  t.same(res.json(), {
    statusCode: 404,
    error: 'Not Found',
    message: 'Route GET /no-such-thing not found',
    code: 'ROUTE_NOT_FOUND',
    name: 'NotFound',
  })
})

t.test('bodies must be JSON, well formed, and within the size limit', async (t) => {
  const { app, tokens } = await buildTestApp(t, { BODY_LIMIT: 2048 })
  const post = (payload: string, contentType: string) =>
    app.inject({
      method: 'POST',
      url: '/ward-occupants',
      headers: { ...bearer(tokens.write), 'content-type': contentType },
      payload,
    })
  const text = await post('bed=1', 'text/plain')
  t.equal(text.statusCode, 415)
  t.match(text.json(), { statusCode: 415, error: 'Unsupported Media Type', code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE' })
  t.equal((await post('bed=1', 'application/x-www-form-urlencoded')).statusCode, 415)
  const broken = await post('{"bed": ', 'application/json')
  t.equal(broken.statusCode, 400)
  t.match(broken.json(), { error: 'Bad Request', code: 'FST_ERR_CTP_INVALID_JSON_BODY' })
  const empty = await post('', 'application/json')
  t.equal(empty.statusCode, 400)
  const huge = await post(JSON.stringify({ ...admit, room: 'x'.repeat(4000) }), 'application/json')
  t.equal(huge.statusCode, 413)
  t.match(huge.json(), { statusCode: 413, code: 'FST_ERR_CTP_BODY_TOO_LARGE' })
  t.equal((await post('[1,2]', 'application/json')).statusCode, 400, 'an array is not a record')
  t.equal((await post('null', 'application/json')).statusCode, 400, 'null is not a record')
})

t.test('validation messages name the offending field', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const post = (payload: object) =>
    app.inject({ method: 'POST', url: '/ward-occupants', headers: bearer(tokens.write), payload })
  const typo = await post({ encounter: 'e', bed: 'b', ocupiedBy: 'p' })
  t.equal(typo.statusCode, 400)
  t.match(typo.json(), { code: 'FST_ERR_VALIDATION', message: /unknown property 'ocupiedBy'/ })
  t.match(typo.json().message, /must have property 'occupiedBy'/)
  const wrongType = await post({ ...admit, bed: 12 })
  t.match(wrongType.json().message, /body\.bed must be string/)
})

t.test('internal failures answer 500 without internals, and health reports the database', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  app.db.close()
  const res = await app.inject({ url: '/ward-occupants', headers: bearer(tokens.read) })
  t.equal(res.statusCode, 500)
  t.same(res.json(), {
    statusCode: 500,
    error: 'Internal Server Error',
    message: 'Internal Server Error',
    code: 'INTERNAL_ERROR',
    name: 'GeneralError',
  })
  const health = await app.inject('/health')
  t.equal(health.statusCode, 503)
  t.same(health.json(), { status: 'unavailable', database: 'unreachable' })
})
