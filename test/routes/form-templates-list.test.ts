import t from 'tap'
import { planOf, statementsRunDuring } from '../db/captured-statements.js'
import { bearer, buildTestApp, type TestApp } from '../helper.js'
import { client } from './form-templates-helper.js'

async function seed(app: TestApp, token: string) {
  const c = client(app, token)
  const make = async (body: object) => (await c.post(body)).json()
  const vitals = await make({
    type: 'intake',
    subtype: 'adult',
    name: 'Vitals',
    tags: ['vitals', 'daily'],
    createdAt: 100,
  })
  const pain = await make({ type: 'intake', subtype: 'child', name: 'Pain', tags: ['pain'], createdAt: 200 })
  const fall = await make({ type: 'risk', name: 'Falls', tags: ['daily', 'restriction::ward-3'], createdAt: 300 })
  const bare = await make({ type: 'risk', createdAt: 400 })
  await c.patch(fall.id, { hide: true })
  return { vitals, pain, fall, bare }
}

t.test('filters on scalar fields, hidden templates and paging', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const { vitals, pain, fall, bare } = await seed(app, tokens.writeA)
  const c = client(app, tokens.readA)
  const ids = async (query: string) => {
    const res = await c.list(query)
    t.equal(res.statusCode, 200, query)
    return res.json().formTemplates.map((r: { id: string }) => r.id)
  }
  t.same(await ids(''), [vitals.id, pain.id, fall.id, bare.id], 'hidden templates are listed, oldest first')
  t.same(await ids('hiddenAt=null'), [vitals.id, pain.id, bare.id])
  t.same(await ids('hiddenAt[$exists]=false'), [vitals.id, pain.id, bare.id])
  t.same(await ids('hiddenAt[$exists]=true'), [fall.id])
  t.same(await ids('hiddenBy=nurse-a'), [fall.id])
  t.same(await ids('type=intake'), [vitals.id, pain.id])
  t.same(await ids('type=intake&subtype=child'), [pain.id])
  t.same(await ids('subtype=null'), [fall.id, bare.id])
  t.same(await ids('name=Falls'), [fall.id])
  t.same(await ids('name[$in][]=Falls&name[$in][]=Pain'), [pain.id, fall.id])
  t.same(await ids('createdAt[$gte]=200&createdAt[$lt]=400'), [pain.id, fall.id])
  t.same(await ids('createdBy=nurse-a&facility=A&$sort[createdAt]=-1'), [bare.id, fall.id, pain.id, vitals.id])
  t.same(await ids(`id=${pain.id}`), [pain.id])
  t.same(await ids('template[$exists]=true'), [])
  t.same(await ids('$or[0][type]=risk&$or[1][name]=Pain'), [pain.id, fall.id, bare.id])
  const page = (await c.list('$limit=2&$skip=1')).json()
  t.same([page.total, page.limit, page.skip, page.formTemplates.length], [4, 2, 1, 2])
  const selected = (await c.list('type=intake&$select[]=name&$select[]=items&$limit=1')).json().formTemplates
  t.same(selected, [{ id: vitals.id, name: 'Vitals' }], '$select keeps only what was asked (and the id)')
})

t.test('tags: contains, $in, $nin, $ne, $exists', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const { vitals, pain, fall, bare } = await seed(app, tokens.writeA)
  const c = client(app, tokens.readA)
  const ids = async (query: string) => (await c.list(query)).json().formTemplates.map((r: { id: string }) => r.id)
  t.same(await ids('tags=daily'), [vitals.id, fall.id])
  t.same(await ids('tags=restriction::ward-3'), [fall.id], 'prefixed tags match whole')
  t.same(await ids('tags=restriction'), [], 'no partial match')
  t.same(await ids('tags[$in][]=pain&tags[$in][]=vitals'), [vitals.id, pain.id])
  t.same(await ids('tags[$in][0]=pain'), [pain.id], 'indexed qs arrays too')
  t.same(await ids('tags[$nin][]=daily'), [pain.id, bare.id])
  t.same(await ids('tags[$ne]=daily'), [pain.id, bare.id])
  t.same(await ids('tags[$exists]=false'), [bare.id])
  t.same(await ids('tags=null'), [bare.id])
  const empty = (await client(app, tokens.writeA).post({ type: 'risk', tags: [], createdAt: 500 })).json()
  t.same(empty.tags, [], 'an empty list is kept as sent')
  t.same(await ids('tags[$exists]=false'), [bare.id], 'an empty list is present, not missing')
  t.same(await ids('tags=null'), [bare.id])
  t.same(await ids('tags[$exists]=true'), [vitals.id, pain.id, fall.id, empty.id])
  t.same(await ids('tags[$in][]=null&tags[$in][]=pain'), [pain.id, bare.id])
  t.same(await ids('tags[$nin][]=daily'), [pain.id, bare.id, empty.id])
  t.same(await ids('tags[$ne]=null'), [vitals.id, pain.id, fall.id, empty.id])
  t.same(await ids('tags=daily&type=risk&hiddenAt=null'), [], 'tags combine with other filters')
  t.same(await ids('tags=daily&type=intake'), [vitals.id])
})

t.test('bad filters are 400, never ignored', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  await seed(app, tokens.writeA)
  const c = client(app, tokens.readA)
  const bad: [string, RegExp][] = [
    ['typo=x', /unknown field 'typo'/],
    ['hidden=true', /unknown field 'hidden'/],
    ['type[$like]=x', /unknown operator '\$like' on type/],
    ['$where=1', /unknown operator '\$where'/],
    ['createdAt=yesterday', /createdAt must be a number/],
    ['hiddenAt[$exists]=maybe', /hiddenAt\[\$exists\] must be true or false/],
    ['tags[$gt]=a', /tags is a list: \$gt is not supported/],
    ['tags[$in][x]=b', /tags\[\$in\] must be a list/],
    ['items=x', /items cannot be filtered on/],
    ['meta[$exists]=true', /meta cannot be filtered on/],
    ['$sort[tags]=1', /cannot sort by the list field 'tags'/],
    ['$sort[items]=1', /cannot sort by 'items'/],
    ['$sort[name]=up', /\$sort\[name\] must be 1 or -1/],
    ['$select[]=secret', /cannot select unknown field 'secret'/],
    ['$limit=-1', /\$limit/],
  ]
  for (const [query, message] of bad) {
    const res = await c.list(query)
    t.equal(res.statusCode, 400, query)
    t.match(res.json().message, message, `${query}: message`)
  }
  t.equal((await c.list('$limit=5000')).json().limit, 1000, 'an over-large $limit is clamped')
})

/** The query plans of the statements the list ran for this caller and query, with the values it bound. */
async function plansOfList(app: TestApp, token: string, query: string): Promise<string[]> {
  const ran = await statementsRunDuring(app.db, async () => {
    const res = await app.inject({ url: `/form-templates?${query}`, headers: bearer(token) })
    if (res.statusCode !== 200) throw new Error(`${query}: ${res.body}`)
  })
  const lists = ran.filter(({ sql }) => /FROM form_templates r/.test(sql))
  if (lists.length < 2) throw new Error(`${query}: the count and the page were not captured`)
  return lists.flatMap((statement) => planOf(app.db, statement))
}

t.test('listing by tag starts from the tag index, never scans the templates', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const c = client(app, tokens.write)
  for (let i = 0; i < 300; i++) {
    await c.post({ type: i % 2 ? 'intake' : 'risk', facility: i % 3 ? 'A' : 'B', tags: [`tag-${i % 50}`, 'common'] })
  }
  for (const [facility, token] of [
    [null, tokens.write],
    ['A', tokens.writeA],
  ] as const) {
    for (const query of ['tags=tag-7', 'tags[$in][]=tag-1&tags[$in][]=tag-2', 'tags=tag-7&type=intake&hiddenAt=null']) {
      const plan = await plansOfList(app, token, query)
      const label = `${query} (facility ${facility})`
      t.ok(
        plan.some((line) => /^SEARCH form_template_tags USING (PRIMARY KEY|COVERING INDEX \S+) \(tag=\?\)/.test(line)),
        `${label}: uses the tag index`,
      )
      t.notOk(
        plan.some((line) => /^SCAN (r|form_templates)\b/.test(line)),
        `${label}: no scan of form_templates (${plan.join(' | ')})`,
      )
      t.ok(
        plan.some((line) => /^SEARCH r USING (COVERING )?INDEX sqlite_autoindex_form_templates_1 \(id=\?\)/.test(line)),
        `${label}: templates are looked up by id`,
      )
    }
  }
  t.equal((await client(app, tokens.readA).list('tags=tag-7')).json().total, 4, 'and the answer is right')
})
