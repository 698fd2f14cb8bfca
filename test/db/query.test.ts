import t from 'tap'
import { bearer, buildTestApp, type TestApp } from '../helper.js'

type Seeded = { app: TestApp; token: string }

async function seed(t: Parameters<typeof buildTestApp>[0]): Promise<Seeded> {
  const { app, tokens } = await buildTestApp(t)
  const rows = [
    { bed: 'B-1', room: 'R-1', encounter: 'e1', occupiedBy: 'p1', createdAt: 1000, provider: 'dr-a' },
    { bed: 'B-2', room: 'R-1', encounter: 'e2', occupiedBy: 'p2', createdAt: 2000 },
    { bed: 'B-3', room: 'R-2', encounter: 'e3', occupiedBy: 'p3', createdAt: 3000, provider: 'dr-b' },
    { bed: 'B-4', room: 'R-2', encounter: 'e4', occupiedBy: 'p4', createdAt: 4000 },
  ]
  for (const row of rows) {
    const res = await app.inject({
      method: 'POST',
      url: '/ward-occupants',
      headers: bearer(tokens.write),
      payload: row,
    })
    t.equal(res.statusCode, 200)
  }
  return { app, token: tokens.read }
}

async function beds({ app, token }: Seeded, query: string) {
  const res = await app.inject({ url: `/ward-occupants?${query}`, headers: bearer(token) })
  return {
    status: res.statusCode,
    body: res.json(),
    beds: (res.json().wardOccupants ?? []).map((r: { bed: string }) => r.bed),
  }
}

t.test('filters, operators, $or, sorting, paging and selection', async (t) => {
  const s = await seed(t)
  t.same((await beds(s, 'room=R-1')).beds, ['B-1', 'B-2'])
  t.same((await beds(s, 'bed[$in][]=B-1&bed[$in][]=B-4')).beds, ['B-1', 'B-4'])
  t.same((await beds(s, 'bed[$in][0]=B-2')).beds, ['B-2'], 'indexed array form')
  t.same((await beds(s, 'bed[$nin][]=B-1&bed[$nin][]=B-4')).beds, ['B-2', 'B-3'])
  t.same((await beds(s, 'bed[$ne]=B-1')).beds, ['B-2', 'B-3', 'B-4'])
  t.same((await beds(s, 'createdAt[$gte]=2000&createdAt[$lt]=4000')).beds, ['B-2', 'B-3'])
  t.same((await beds(s, 'createdAt[$gt]=3000')).beds, ['B-4'])
  t.same((await beds(s, 'createdAt[$lte]=1000')).beds, ['B-1'])
  t.same((await beds(s, 'provider=null')).beds, ['B-2', 'B-4'], 'null matches a missing value')
  t.same((await beds(s, 'provider[$exists]=true')).beds, ['B-1', 'B-3'])
  t.same((await beds(s, 'provider[$exists]=false')).beds, ['B-2', 'B-4'])
  t.same((await beds(s, 'provider[$ne]=dr-a')).beds, ['B-2', 'B-3', 'B-4'], '$ne also matches missing values')
  t.same((await beds(s, 'provider[$nin][]=dr-a')).beds, ['B-2', 'B-3', 'B-4'])
  t.same((await beds(s, 'provider[$in][]=null&provider[$in][]=dr-b')).beds, ['B-2', 'B-3', 'B-4'])
  t.same((await beds(s, '$or[0][bed]=B-1&$or[1][room]=R-2')).beds, ['B-1', 'B-3', 'B-4'])
  t.same((await beds(s, '$and[0][room]=R-2&$and[1][provider]=dr-b')).beds, ['B-3'])
  t.same((await beds(s, '$sort[createdAt]=-1')).beds, ['B-4', 'B-3', 'B-2', 'B-1'])
  t.same((await beds(s, '$sort[room]=-1&$sort[createdAt]=1')).beds, ['B-3', 'B-4', 'B-1', 'B-2'], 'keys in order given')
  const page = await beds(s, '$limit=2&$skip=1')
  t.same(page.beds, ['B-2', 'B-3'])
  t.match(page.body, { total: 4, limit: 2, skip: 1 })
  const countOnly = await beds(s, '$limit=0')
  t.same(countOnly.body, { wardOccupants: [], total: 4, limit: 0, skip: 0 })
  t.same((await beds(s, '$skip=10')).body, { wardOccupants: [], total: 4, limit: 100, skip: 10 })
  const selected = await beds(s, '$select[]=bed&$limit=1')
  t.same(Object.keys(selected.body.wardOccupants[0]).sort(), ['bed', 'id'], 'the id is always returned')
  t.same((await beds(s, '')).body.limit, 100, 'default page size')
  t.same((await beds(s, '$limit=5000')).body.limit, 1000, 'clamped to the maximum')
})

t.test('bad queries are 400 naming the problem, never ignored', async (t) => {
  const s = await seed(t)
  const cases: [string, RegExp][] = [
    ['colour=red', /unknown field 'colour'/],
    ['bed[$regex]=B', /unknown operator '\$regex' on bed/],
    ['$where=1', /unknown operator '\$where'/],
    ['createdAt=yesterday', /createdAt must be a number/],
    ['createdAt[$gt]=1e3', /createdAt must be a number/],
    ['createdAt[$gt]=null', /cannot compare with null/],
    ['provider[$exists]=maybe', /must be true or false/],
    ['bed=B-1&bed=B-2', /bed must be a single value/],
    ['$limit=-1', /\$limit/],
    ['$limit=ten', /\$limit/],
    ['$skip=1.5', /\$skip/],
    ['$sort[colour]=1', /cannot sort by unknown field 'colour'/],
    ['$sort[bed]=up', /\$sort\[bed\] must be 1 or -1/],
    ['$sort=bed', /\$sort must look like/],
    ['$select[]=password', /cannot select unknown field 'password'/],
    // Found by the query fuzzer: an object entry used to be a 500 (String() of a null-prototype object).
    ['$select[0][$or]=', /\$select entries must be field names/],
    ['$select[0][]=id', /\$select entries must be field names/],
    ['$or[0]=x', /each \$or entry must be an object/],
    ['$or[0][$limit]=1', /only allowed at the top level/],
    ['bed[$in][a]=1', /must be a list/],
    ['bed[]=B-1', /bed must be a single value/],
  ]
  for (const [query, message] of cases) {
    const res = await beds(s, query)
    t.equal(res.status, 400, query)
    t.match(res.body, { statusCode: 400, code: /^(INVALID_QUERY|FST_ERR_VALIDATION)$/, message }, `${query}: message`)
  }
})

t.test('SQL in field names and values stays data', async (t) => {
  const s = await seed(t)
  const injectedValue = await beds(s, `bed=${encodeURIComponent("B-1' OR '1'='1")}`)
  t.equal(injectedValue.status, 200)
  t.same(injectedValue.beds, [], 'the value is compared as text')
  const injectedField = await beds(s, `${encodeURIComponent('bed=1 OR 1=1; DROP TABLE ward_occupants; --')}=x`)
  t.equal(injectedField.status, 400)
  const injectedSort = await beds(s, `$sort[${encodeURIComponent('bed; DROP TABLE tokens')}]=1`)
  t.equal(injectedSort.status, 400)
  t.equal((await beds(s, '')).beds.length, 4, 'the table is intact')
})

t.test('keys named like Object.prototype members are unknown fields, never dropped or used', async (t) => {
  const s = await seed(t)
  const cases: [string, RegExp][] = [
    ['constructor=1', /unknown field 'constructor'/],
    ['hasOwnProperty=1', /unknown field 'hasOwnProperty'/],
    ['$sort[toString]=1', /cannot sort by unknown field 'toString'/],
    ['$or[0][constructor]=x', /unknown field 'constructor'/],
    ['constructor[prototype][x]=1', /unknown field 'constructor'/],
    ['__proto__[bed]=B-1', /__proto__/],
    ['bed=B-1&%5F%5Fproto%5F%5F=1', /__proto__/],
    ['room[$ne]=%E0&__pro%74o__[bed]=B-1', /__proto__/],
    ['bed=B-1&a+b[__proto__]=1', /__proto__/],
    ['$select[]=valueOf', /cannot select unknown field 'valueOf'/],
  ]
  for (const [query, message] of cases) {
    const res = await beds(s, query)
    t.equal(res.status, 400, query)
    t.match(res.body, { code: 'INVALID_QUERY', message }, `${query}: message`)
  }
  t.equal(({} as Record<string, unknown>).bed, undefined, 'Object.prototype untouched')
  const asValue = await beds(s, 'bed=__proto__&encounter[$ne]=x__proto__y')
  t.equal(asValue.status, 200, 'a value may say __proto__: it is data')
  t.same(asValue.beds, [])
  t.equal((await beds(s, 'room[$ne]=%E0')).status, 200, 'a value that is not valid percent-encoding stays text')
})

t.test('a query string over the parser limits is refused, so no filter is silently cut off', async (t) => {
  const s = await seed(t)
  const many = Array.from({ length: 1000 }, () => '$select=bed').join('&')
  const tooMany = await beds(s, `${many}&bed=B-1`)
  t.equal(tooMany.status, 400, 'the 1001st parameter is not dropped')
  t.match(tooMany.body, { code: 'INVALID_QUERY', message: /Parameter limit exceeded/ })
  const longList = Array.from({ length: 1001 }, (_, i) => `bed[$nin][]=zz${i}`).join('&')
  t.equal((await beds(s, longList)).status, 400, 'the 1001st list entry is not dropped')
  const farIndex = await beds(s, 'bed[$in][1500]=B-1')
  t.match(farIndex.body, { statusCode: 400, message: /Array limit exceeded/ }, 'nor read as an object')
  const deep = await beds(s, '$or[0][$and][0][$or][0][$and][0][bed]=B-1')
  t.equal(deep.status, 400, 'nesting deeper than the parser reads is refused, not cut into a literal key')
  t.match(deep.body, { code: 'INVALID_QUERY', message: /depth/ })
  const atLimit = Array.from({ length: 999 }, () => '$select=bed').join('&')
  t.equal((await beds(s, `${atLimit}&bed=B-1`)).beds.length, 1, '1000 parameters are still read, filter included')
  const bodyless = await s.app.inject({ url: '/ward-occupants/01J0000000000000000000000?constructor=1' })
  t.equal(bodyless.statusCode, 401, 'authentication is checked before the query string')
})

t.test('$limit and $skip of any size: $limit is clamped, $skip pages past the end', async (t) => {
  const s = await seed(t)
  t.same((await beds(s, '$limit=10000000000000000000000')).body.limit, 1000)
  const far = await beds(s, '$skip=10000000000000000000000')
  t.equal(far.status, 200)
  t.same(far.beds, [])
  t.equal(far.body.total, 4)
})
