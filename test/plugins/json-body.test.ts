import t from 'tap'
import { unstorableValue } from '../../lib/json-values.js'
import { bearer, buildTestApp, type TestApp } from '../helper.js'

const admit = '{"encounter":"ENC","bed":"B-1","occupiedBy":"patient-1"}'

function counts(app: TestApp) {
  const count = (table: string) => (app.db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n
  return { occupants: count('ward_occupants'), templates: count('form_templates'), audit: count('audit_log') }
}

t.test('a body must be UTF-8: another charset is 415, invalid bytes are 400, and nothing is stored', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const before = counts(app)
  const post = (payload: Buffer | string, contentType: string) =>
    app.inject({
      method: 'POST',
      url: '/ward-occupants',
      headers: { ...bearer(tokens.write), 'content-type': contentType },
      payload,
    })
  const latin1 = Buffer.from(admit.replace('ENC', 'Ren\u00e9e'), 'latin1')
  const declared = await post(latin1, 'application/json; charset=iso-8859-1')
  t.equal(declared.statusCode, 415)
  t.same(declared.json(), {
    statusCode: 415,
    error: 'Unsupported Media Type',
    message: "JSON bodies must be UTF-8, not 'iso-8859-1'",
    code: 'UNSUPPORTED_CHARSET',
  })
  const undeclared = await post(latin1, 'application/json')
  t.equal(undeclared.statusCode, 400, 'a Latin-1 byte is not silently turned into U+FFFD')
  t.match(undeclared.json(), { code: 'INVALID_ENCODING', message: 'the body is not valid UTF-8' })
  const truncated = Buffer.concat([Buffer.from(admit.slice(0, -1)), Buffer.from([0xe2, 0x82]), Buffer.from('}')])
  t.equal((await post(truncated, 'application/json')).statusCode, 400, 'a cut multi-byte sequence')
  t.same(counts(app), before, 'nothing was stored')

  const utf8 = admit.replace('ENC', 'Ren\u00e9e \u{1F3E5}')
  for (const type of ['application/json; charset=utf-8', 'application/json; charset="UTF-8"', 'application/json']) {
    const ok = await post(utf8, type)
    t.equal(ok.statusCode, 200, type)
    const stored = await app.inject({ url: `/ward-occupants/${ok.json().id}`, headers: bearer(tokens.write) })
    t.equal(stored.json().encounter, 'Ren\u00e9e \u{1F3E5}', `${type}: stored as sent`)
    await app.inject({ method: 'DELETE', url: `/ward-occupants/${ok.json().id}`, headers: bearer(tokens.write) })
  }
})

t.test('values that would not be stored as sent are 400 naming the field, and nothing is stored', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const before = counts(app)
  const post = (url: string, payload: string) =>
    app.inject({
      method: 'POST',
      url,
      headers: { ...bearer(tokens.write), 'content-type': 'application/json' },
      payload,
    })
  const cases: [string, string, string][] = [
    ['/ward-occupants', admit.replace('"ENC"', '"enc-\\ud83d"'), 'body.encounter is not well-formed Unicode'],
    ['/ward-occupants', admit.replace('"B-1"', '"\\udc00B"'), 'body.bed is not well-formed Unicode'],
    ['/form-templates', '{"type":"t\\ud800"}', 'body.type is not well-formed Unicode'],
    ['/form-templates', '{"type":"t","meta":{"x":1e400}}', 'body.meta.x must be a finite number'],
    ['/form-templates', '{"type":"t","config":{"a":[1,-1e999]}}', 'body.config.a[1] must be a finite number'],
    ['/form-templates', `{"type":"t","meta":{"n":${'9'.repeat(400)}}}`, 'body.meta.n must be a finite number'],
    ['/form-templates', '{"type":"t","meta":{"\\ud800":1}}', 'body.meta has a property name that is not well-formed'],
    [
      '/form-templates',
      '{"type":"t","items":[{"type":"text","text":"q\\udfff"}]}',
      'body.items[0].text is not well-formed Unicode',
    ],
  ]
  for (const [url, payload, message] of cases) {
    const res = await post(url, payload)
    t.equal(res.statusCode, 400, payload)
    t.match(res.json(), { statusCode: 400, code: 'FST_ERR_VALIDATION' })
    t.ok(res.json().message.startsWith(message), `${payload}: ${res.json().message}`)
  }
  t.same(counts(app), before, 'nothing was stored')
  const pair = await post('/ward-occupants', admit.replace('"ENC"', '"enc-\\ud83c\\udfe5"'))
  t.equal(pair.statusCode, 200, 'an escaped surrogate pair is one well-formed character')
  t.equal(pair.json().encounter, 'enc-\u{1F3E5}')
  const big = await post('/form-templates', '{"type":"t","meta":{"x":1e308,"y":-0.5}}')
  t.same(big.json().meta, { x: 1e308, y: -0.5 }, 'large finite numbers are kept')
})

t.test('the check walks any depth without recursion', async (t) => {
  const deep = `${'['.repeat(200_000)}1e999${']'.repeat(200_000)}`
  t.match(unstorableValue(JSON.parse(deep)), /must be a finite number$/)
  t.equal(unstorableValue({ a: [{ b: 'ok', c: 1 }], d: null, e: true }), null)
})
