import t from 'tap'
import { bearer, buildTestApp } from '../helper.js'
import { client, seed } from './notifications-fixtures.js'

t.test('marking seen is idempotent, per account, and allowed to read tokens', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const { ids } = seed(app)
  const id = ids.wardA as string
  const first = await client(app, tokens.writeA).seen(id)
  t.equal(first.statusCode, 200)
  t.match(first.json(), { id, seenBy: ['nurse-a'], facility: 'A' })
  const again = await client(app, tokens.writeA).seen(id)
  t.same(again.json(), first.json(), 'a second mark changes nothing')
  const reader = await client(app, tokens.readA).seen(id)
  t.equal(reader.statusCode, 200, 'a read token may mark what it has read')
  t.same(reader.json().seenBy, ['nurse-a', 'viewer-a'])
  t.same((await client(app, tokens.write).get(id)).json().seenBy, ['nurse-a', 'viewer-a'])
  const rows = app.db.prepare('SELECT account FROM notification_seen WHERE notification_id = ?').all(id)
  t.equal(rows.length, 2)
})

t.test('one notification answers an ETag that changes when someone marks it seen', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const { ids } = seed(app)
  const id = ids.wardA as string
  const nurse = client(app, tokens.writeA)
  t.equal((await nurse.get(id)).headers.etag, '"1"', 'nobody has seen it yet')
  const marked = await nurse.seen(id)
  t.equal(marked.headers.etag, '"2"', 'the mark answers the new version')
  t.equal((await nurse.get(id)).headers.etag, '"2"')
  t.equal((await nurse.seen(id)).headers.etag, '"2"', 'marking again changes nothing, nor the ETag')
  await client(app, tokens.readA).seen(id)
  t.equal((await nurse.get(id)).headers.etag, '"3"', "another reader's mark is a change too")
})

t.test('only what is addressed to the caller can be marked', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const { ids } = seed(app)
  for (const name of ['nurseAinB', 'viewerAndAdminA', 'wardB']) {
    const res = await client(app, tokens.writeA).seen(ids[name] as string)
    t.equal(res.statusCode, 404, name)
  }
  t.equal((await client(app, tokens.writeA).seen('0'.repeat(24))).statusCode, 404)
  t.equal((await client(app, tokens.writeA).seen('x'.repeat(65))).statusCode, 400)
  t.equal((await app.inject({ method: 'POST', url: `/notifications/${ids.wardA}/seen` })).statusCode, 401)
  const { n } = app.db.prepare('SELECT count(*) AS n FROM notification_seen').get() as { n: number }
  t.equal(n, 0, 'nothing was recorded')
})

t.test(
  'marking seen takes no body, or an empty one (or null); anything else is a 400 that records nothing',
  async (t) => {
    const { app, tokens } = await buildTestApp(t)
    const { ids } = seed(app)
    const url = `/notifications/${ids.wardA}/seen`
    const post = (payload?: unknown, contentType = 'application/json') =>
      app.inject({
        method: 'POST',
        url,
        headers: { ...bearer(tokens.writeA), ...(payload === undefined ? {} : { 'content-type': contentType }) },
        ...(payload === undefined ? {} : { payload: typeof payload === 'string' ? payload : JSON.stringify(payload) }),
      })
    for (const [label, payload] of [
      ['an unknown property', { seen: true }],
      ['an array', []],
      ['a string', '"yes"'],
      ['a number', '1'],
    ] as const) {
      const res = await post(payload)
      t.equal(res.statusCode, 400, label)
      t.equal(res.json().code, 'FST_ERR_VALIDATION', label)
    }
    t.equal(
      (await post({ seen: true })).json().message,
      "body has unknown property 'seen'",
      'the specific message only',
    )
    t.equal((await post([])).json().message, 'body must be null; body must be object', 'both shapes it may take')
    t.equal((await post('{"a":', 'application/json')).statusCode, 400, 'malformed JSON')
    t.equal((await post('seen', 'text/plain')).statusCode, 415, 'not JSON')
    const { n } = app.db.prepare('SELECT count(*) AS n FROM notification_seen').get() as { n: number }
    t.equal(n, 0, 'nothing was recorded')
    t.equal((await post()).statusCode, 200, 'no body')
    t.equal((await post({})).statusCode, 200, 'an empty object')
    t.equal((await post('null')).statusCode, 200, 'JSON null, nothing too')
  },
)

t.test('unseen filter and count follow each account', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const { ids, names } = seed(app)
  const nurse = client(app, tokens.writeA)
  const viewer = client(app, tokens.readA)
  t.same((await nurse.unseen()).json(), { count: 3 })
  await nurse.seen(ids.wardA as string)
  await nurse.seen(ids.nurseA as string)
  t.same(names((await nurse.list('$unseen=true')).json().notifications), ['everywhere'])
  t.same(names((await nurse.list('$unseen=false')).json().notifications), ['wardA', 'nurseA'])
  t.same(names((await nurse.list('seenBy[$ne]=nurse-a')).json().notifications), ['everywhere'], 'the $ne form')
  t.same(names((await nurse.list('seenBy=nurse-a')).json().notifications), ['wardA', 'nurseA'])
  t.same((await nurse.unseen()).json(), { count: 1 })
  t.same((await nurse.unseen('type=ward')).json(), { count: 0 }, 'the count takes the list filters')
  t.same((await nurse.unseen('$unseen=false&$limit=5')).json(), { count: 1 }, 'paging and $unseen do not change it')
  t.same((await viewer.unseen()).json(), { count: 3 }, 'the viewer has seen nothing yet')
  t.same(names((await viewer.list('$unseen=true&$sort[createdAt]=-1')).json().notifications), [
    'viewerAndAdminA',
    'everywhere',
    'wardA',
  ])
  const bad = await nurse.unseen('colour=red')
  t.equal(bad.statusCode, 400)
  t.match(bad.json(), { code: 'INVALID_QUERY', message: "unknown field 'colour'" })
  t.equal((await app.inject({ url: '/notifications/unseen-count' })).statusCode, 401)
})

t.test('the unseen-count path never collides with an id', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const res = await app.inject({ url: '/notifications/unseen-count', headers: bearer(tokens.read) })
  t.same(res.json(), { count: 0 })
  t.equal((await app.inject({ url: '/notifications/unseen-counts', headers: bearer(tokens.read) })).statusCode, 404)
})
