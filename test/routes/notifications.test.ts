import t from 'tap'
import { bearer, buildTestApp } from '../helper.js'
import { client, seed } from './notifications-fixtures.js'

t.test('each caller sees its facility and facility-less notifications addressed to it or to all', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const { names } = seed(app)
  const expected: [keyof typeof tokens, string[]][] = [
    ['writeA', ['wardA', 'everywhere', 'nurseA']],
    ['readA', ['wardA', 'everywhere', 'viewerAndAdminA']],
    ['adminA', ['wardA', 'everywhere', 'viewerAndAdminA']],
    ['writeB', ['wardB', 'everywhere', 'unboundNurses']],
    ['write', ['wardA', 'wardB', 'everywhere', 'unboundNurses']],
    ['admin', ['wardA', 'wardB', 'everywhere']],
    ['read', ['wardA', 'wardB', 'everywhere']],
  ]
  for (const [who, visible] of expected) {
    const res = await client(app, tokens[who]).list()
    t.equal(res.statusCode, 200, who)
    const body = res.json()
    t.same(names(body.notifications), visible, `${who} sees exactly its notifications, oldest first`)
    t.match(body, { total: visible.length, limit: 100, skip: 0 })
  }
})

t.test('get by id: the record, or 404 for what is not addressed to the caller', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const { ids } = seed(app)
  const mine = await client(app, tokens.writeA).get(ids.nurseA as string)
  t.equal(mine.statusCode, 200)
  t.same(mine.json(), {
    id: ids.nurseA,
    createdAt: 4000,
    code: 'bed-occupied',
    type: 'ward',
    title: 'Bed occupied',
    body: 'A bed was occupied.',
    meta: { x: 1 },
    seenBy: [],
    direction: 'outbound',
    facility: 'A',
  })
  const everywhere = (await client(app, tokens.writeB).get(ids.everywhere as string)).json()
  t.notOk('facility' in everywhere, 'a notification for every facility has no facility field')
  t.notOk('meta' in everywhere, 'absent optional fields are omitted')
  t.equal(everywhere.direction, 'inbound')
  for (const name of ['nurseAinB', 'viewerAndAdminA', 'wardB', 'unboundNurses']) {
    const res = await client(app, tokens.writeA).get(ids[name] as string)
    t.equal(res.statusCode, 404, `nurse-a cannot get ${name}`)
    t.match(res.json(), { statusCode: 404, code: 'NOT_FOUND', message: `notification ${ids[name]} not found` })
  }
  t.equal(
    (await client(app, tokens.admin).get(ids.nurseA as string)).statusCode,
    404,
    "admins do not read other accounts' notifications",
  )
})

t.test('the addressees are shown to admins only', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const { ids, names } = seed(app)
  const id = ids.viewerAndAdminA as string
  t.same((await client(app, tokens.adminA).get(id)).json().to, ['viewer-a', 'admin-a'], 'deduplicated, in order')
  t.notOk('to' in (await client(app, tokens.readA).get(id)).json())
  t.notOk('to' in (await client(app, tokens.readA).list()).json().notifications[2])
  t.same(names((await client(app, tokens.adminA).list('to=viewer-a')).json().notifications), ['viewerAndAdminA'])
  t.same(names((await client(app, tokens.adminA).list('to[$exists]=false')).json().notifications), [
    'wardA',
    'everywhere',
  ])
  const denied = await client(app, tokens.readA).list('to=viewer-a')
  t.equal(denied.statusCode, 400)
  t.match(denied.json().message, /unknown field 'to'/)
})

t.test('the shared query engine: filters, ranges, sorting, paging, selection', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const { names } = seed(app)
  const c = client(app, tokens.write)
  const cases: [string, string[]][] = [
    ['code=new-queue-item', ['everywhere']],
    ['type=ward', ['wardA', 'wardB', 'unboundNurses']],
    ['createdAt[$gte]=2000&createdAt[$lt]=6000', ['wardB', 'everywhere']],
    ['direction=inbound', ['everywhere']],
    ['direction=null', ['wardA', 'wardB', 'unboundNurses']],
    ['facility=null', ['everywhere', 'unboundNurses']],
    ['facility[$in][]=A&facility[$in][]=B', ['wardA', 'wardB']],
    ['$or[0][code]=new-queue-item&$or[1][facility]=B', ['wardB', 'everywhere']],
    ['$sort[createdAt]=-1', ['unboundNurses', 'everywhere', 'wardB', 'wardA']],
    ['$limit=2&$skip=1', ['wardB', 'everywhere']],
  ]
  for (const [query, expected] of cases) {
    const res = await c.list(query)
    t.equal(res.statusCode, 200, query)
    t.same(names(res.json().notifications), expected, query)
  }
  const page = (await c.list('$limit=0')).json()
  t.same(page, { notifications: [], total: 4, limit: 0, skip: 0 })
  const selected = (await c.list('code=new-queue-item&$select[]=title&$select[]=meta')).json().notifications
  t.same(Object.keys(selected[0]).sort(), ['id', 'title'])
})

t.test('bad input: unknown fields and operators, bad ids, unknown routes, no token', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const { ids } = seed(app)
  const c = client(app, tokens.writeA)
  const queries: [string, RegExp][] = [
    ['colour=red', /unknown field 'colour'/],
    ['code[$regex]=x', /unknown operator '\$regex' on code/],
    ['$where=1', /unknown operator '\$where'/],
    ['createdAt[$gt]=soon', /createdAt must be a number/],
    ['meta=x', /meta cannot be filtered on/],
    ['seenBy[$gt]=a', /seenBy is a list/],
    ['$sort[seenBy]=1', /cannot sort by the list field 'seenBy'/],
    ['$unseen=maybe', /\$unseen must be one of: true, false/],
    ['$limit=-1', /\$limit/],
  ]
  for (const [query, message] of queries) {
    const res = await c.list(query)
    t.equal(res.statusCode, 400, query)
    t.match(res.json().message, message, query)
  }
  t.equal((await c.get('not-an-id')).statusCode, 404)
  t.equal((await c.get('0'.repeat(24))).statusCode, 404)
  const long = await c.get('a'.repeat(65))
  t.equal(long.statusCode, 400)
  t.match(long.json(), { code: 'FST_ERR_VALIDATION' })
  const routes: [string, string][] = [
    ['POST', '/notifications'],
    ['PATCH', `/notifications/${ids.nurseA}`],
    ['DELETE', `/notifications/${ids.nurseA}`],
    ['GET', `/notifications/${ids.nurseA}/seen`],
    ['GET', `/notifications/${ids.nurseA}/other`],
  ]
  for (const [method, url] of routes) {
    const res = await app.inject({ method: method as 'GET', url, headers: bearer(tokens.admin) })
    t.equal(res.statusCode, 404, `${method} ${url}`)
    t.match(res.json(), { code: 'ROUTE_NOT_FOUND' })
  }
  t.equal((await app.inject({ url: '/notifications' })).statusCode, 401)
  t.equal((await app.inject({ url: `/notifications/${ids.wardA}`, headers: bearer('nope') })).statusCode, 401)
})
