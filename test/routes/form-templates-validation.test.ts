import t from 'tap'
import { bearer, buildTestApp } from '../helper.js'
import { client } from './form-templates-helper.js'

const base = { type: 'intake' }
const q = (extra: object) => ({ ...base, items: [{ question: 'Q', type: 'date', ...extra }] })

t.test('bad create bodies are 400, name the field and change nothing', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const c = client(app, tokens.write)
  const bodies: [string, unknown, RegExp][] = [
    ['missing type', { name: 'n' }, /body must have property 'type'/],
    ['empty type', { type: '' }, /body\.type must NOT have fewer than 1 characters/],
    ['number type', { type: 3 }, /body\.type must be string/],
    ['null type', { type: null }, /body\.type must be string/],
    ['over-long type', { type: 't'.repeat(201) }, /body\.type must NOT have more than 200 characters/],
    ['empty name', { ...base, name: '' }, /body\.name must NOT have fewer than 1/],
    ['null name', { ...base, name: null }, /body\.name must be string/],
    ['string timestamp', { ...base, createdAt: '1000' }, /body\.createdAt must be integer/],
    ['fractional timestamp', { ...base, createdAt: 1.5 }, /body\.createdAt must be integer/],
    ['typo', { ...base, desription: 'x' }, /body has unknown property 'desription'/],
    ['id', { ...base, id: 'aaaaaaaaaaaaaaaaaaaaaaaa' }, /unknown property 'id'/],
    ['createdBy', { ...base, createdBy: 'someone' }, /unknown property 'createdBy'/],
    ['hiddenAt', { ...base, hiddenAt: 1 }, /unknown property 'hiddenAt'/],
    ['hiddenBy', { ...base, hiddenBy: 'x' }, /unknown property 'hiddenBy'/],
    ['hide on create', { ...base, hide: true }, /unknown property 'hide'/],
    ['items not a list', { ...base, items: { type: 'date' } }, /body\.items must be array/],
    ['tags not a list', { ...base, tags: 'vitals' }, /body\.tags must be array/],
    ['number tag', { ...base, tags: [1] }, /body\.tags\[0\] must be string/],
    ['empty tag', { ...base, tags: [''] }, /body\.tags\[0\] must NOT have fewer than 1/],
    ['repeated tag', { ...base, tags: ['a', 'a'] }, /body\.tags must NOT have duplicate items/],
    ['meta not an object', { ...base, meta: [1] }, /body\.meta must be object/],
    ['config not an object', { ...base, config: 'x' }, /body\.config must be object/],
    ['not an object', [base], /body must be object/],
  ]
  for (const [name, body, message] of bodies) {
    const res = await c.post(body)
    t.equal(res.statusCode, 400, name)
    t.match(res.json(), { code: 'FST_ERR_VALIDATION', message }, `${name}: message`)
  }
  t.equal((await c.list()).json().total, 0, 'nothing was written')
  t.equal(app.audit.list({ resource: 'form-templates', limit: 100 }).length, 0, 'nothing was audited')
})

t.test('bad items are 400 naming the item by index and the field', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const c = client(app, tokens.write)
  const ok = { question: 'Q', type: 'date' }
  const bodies: [string, unknown, RegExp][] = [
    ['missing type', { ...base, items: [ok, { question: 'Q' }] }, /body\.items\[1\] must have property 'type'/],
    [
      'unknown type',
      { ...base, items: [ok, ok, { type: 'essay' }] },
      /body\.items\[2\]\.type must be one of: identification, multiplechoice, trueorfalse, checklist, date, time, year/,
    ],
    ['number type', q({ type: 1 }), /body\.items\[0\]\.type must be string/],
    ['unknown property', q({ answer: 'x' }), /body\.items\[0\] has unknown property 'answer'/],
    ['choices not a list', q({ choices: 'a,b' }), /body\.items\[0\]\.choices must be array/],
    ['number choice', q({ choices: ['a', 2] }), /body\.items\[0\]\.choices\[1\] must be string/],
    ['empty choice', q({ choices: [''] }), /body\.items\[0\]\.choices\[0\] must NOT have fewer than 1/],
    ['repeated choice', q({ choices: ['a', 'b', 'a'] }), /body\.items\[0\]\.choices\[2\] repeats the choice 'a'/],
    [
      'multiplechoice without choices',
      { ...base, items: [ok, { type: 'multiplechoice' }] },
      /body\.items\[1\]\.choices must have at least one choice for a multiplechoice item/,
    ],
    [
      'checklist with no choices',
      q({ type: 'checklist', choices: [] }),
      /body\.items\[0\]\.choices must have at least one/,
    ],
    ['required not boolean', q({ required: 'yes' }), /body\.items\[0\]\.required must be boolean/],
    ['order not a number', q({ order: '1' }), /body\.items\[0\]\.order must be number/],
    ['empty question', q({ question: '' }), /body\.items\[0\]\.question must NOT have fewer than 1/],
    ['empty set', q({ set: '' }), /body\.items\[0\]\.set must NOT have fewer than 1/],
    ['empty id', q({ id: '' }), /body\.items\[0\]\.id must NOT have fewer than 1/],
    ['number id', q({ id: 7 }), /body\.items\[0\]\.id must be string/],
    [
      'repeated id',
      { ...base, items: [{ id: 'a', type: 'date' }, ok, { id: 'a', type: 'time' }] },
      /body\.items\[2\]\.id 'a' repeats body\.items\[0\]\.id/,
    ],
    ['item not an object', { ...base, items: ['date'] }, /body\.items\[0\] must be object/],
  ]
  for (const [name, body, message] of bodies) {
    const res = await c.post(body)
    t.equal(res.statusCode, 400, name)
    t.match(res.json(), { code: 'FST_ERR_VALIDATION', message }, `${name}: message`)
  }
  t.equal((await c.list()).json().total, 0, 'nothing was written')
  const time = await c.post(q({ type: 'time', choices: ['morning'] }))
  t.equal(time.statusCode, 200, 'choices are allowed, not required, on the other types')
})

t.test('size limits: each field at its limit passes, one over is a clear 400', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const c = client(app, tokens.write)
  const items = (n: number) => Array.from({ length: n }, () => ({ type: 'date' }))
  const choices = (n: number) => Array.from({ length: n }, (_, i) => `choice ${i}`)
  const tags = (n: number) => Array.from({ length: n }, (_, i) => `tag-${i}`)
  // JSON text of { pad: 'x…' } is 10 bytes plus the padding.
  const object = (bytes: number) => ({ pad: 'x'.repeat(bytes - 10) })
  const cases: [string, object, object, RegExp][] = [
    [
      'template',
      { template: 't'.repeat(200_000) },
      { template: 't'.repeat(200_001) },
      /body\.template must NOT have more than 200000 characters/,
    ],
    [
      'description',
      { description: 'd'.repeat(10_000) },
      { description: 'd'.repeat(10_001) },
      /body\.description must NOT have more than 10000/,
    ],
    ['items', { items: items(500) }, { items: items(501) }, /body\.items must NOT have more than 500 items/],
    [
      'choices',
      q({ choices: choices(200) }),
      q({ choices: choices(201) }),
      /body\.items\[0\]\.choices must NOT have more than 200 items/,
    ],
    [
      'question',
      q({ question: 'q'.repeat(4000) }),
      q({ question: 'q'.repeat(4001) }),
      /body\.items\[0\]\.question must NOT have more than 4000/,
    ],
    ['tags', { tags: tags(100) }, { tags: tags(101) }, /body\.tags must NOT have more than 100 items/],
    [
      'meta',
      { meta: object(65_536) },
      { meta: object(65_537) },
      /body\.meta is too large: 65537 bytes as JSON, at most 65536/,
    ],
    ['config', { config: object(65_536) }, { config: object(65_537) }, /body\.config is too large: 65537 bytes/],
  ]
  for (const [name, atLimit, overLimit, message] of cases) {
    t.equal((await c.post({ ...base, ...atLimit })).statusCode, 200, `${name} at its limit`)
    const res = await c.post({ ...base, ...overLimit })
    t.equal(res.statusCode, 400, `${name} over its limit`)
    t.match(res.json(), { code: 'FST_ERR_VALIDATION', message }, `${name}: message`)
  }
  const multibyte = await c.post({ ...base, meta: { pad: 'é'.repeat(32_768) } })
  t.match(
    multibyte.json(),
    { statusCode: 400, message: /body\.meta is too large/ },
    'the meta limit counts UTF-8 bytes',
  )
  const record = (await c.post(base)).json()
  const patched = await c.patch(record.id, { config: object(65_537) })
  t.equal(patched.statusCode, 400, 'patch has the same limits')
  t.equal((await c.get(record.id)).headers.etag, '"1"', 'the refused patch changed nothing')
})

t.test('whole-body limit, content type and malformed JSON', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const huge = { ...base, meta: { a: 'x'.repeat(60_000) }, template: 'y'.repeat(200_000), items: [] as object[] }
  for (let i = 0; i < 400; i++) huge.items.push({ type: 'checklist', choices: ['c'.repeat(999), 'd'.repeat(999)] })
  const tooBig = await client(app, tokens.write).post(huge)
  t.equal(tooBig.statusCode, 413, 'a body over BODY_LIMIT (1 MiB by default) is a 413')
  t.match(tooBig.json(), { statusCode: 413, code: 'FST_ERR_CTP_BODY_TOO_LARGE' })
  const headers = { ...bearer(tokens.write) }
  const text = await app.inject({
    method: 'POST',
    url: '/form-templates',
    headers: { ...headers, 'content-type': 'text/plain' },
    payload: 'type=intake',
  })
  t.equal(text.statusCode, 415)
  const malformed = await app.inject({
    method: 'POST',
    url: '/form-templates',
    headers: { ...headers, 'content-type': 'application/json' },
    payload: '{"type": "intake",',
  })
  t.equal(malformed.statusCode, 400)
  t.equal((await client(app, tokens.write).list()).json().total, 0)
})
