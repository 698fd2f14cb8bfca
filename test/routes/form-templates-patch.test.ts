import t from 'tap'
import { buildTestApp } from '../helper.js'
import { client, intake } from './form-templates-helper.js'

const full = { ...intake, description: 'd', template: 'p= name', meta: { a: 1 }, config: { b: 2 } }

t.test('patch replaces each field it names, and only that field', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const a = client(app, tokens.writeA)
  const record = (await a.post(full)).json()
  const changes: [string, unknown][] = [
    ['type', 'discharge'],
    ['subtype', 'child'],
    ['name', 'Renamed'],
    ['description', 'new text'],
    ['template', 'h1 new'],
    ['createdAt', 5],
    ['meta', { replaced: true }],
    ['config', { nested: { x: [1] } }],
    ['tags', ['other']],
  ]
  let current = record
  for (const [name, value] of changes) {
    const res = await a.patch(record.id, { [name]: value })
    t.equal(res.statusCode, 200, name)
    t.same(res.json(), { ...current, [name]: value }, `${name} replaced, everything else kept`)
    current = res.json()
  }
  t.same(current.meta, { replaced: true }, 'meta is replaced whole, not merged')
  t.equal((await a.get(record.id)).headers.etag, `"${changes.length + 1}"`, 'each change is a new version')
})

t.test('items are replaced as a whole list; sent ids are kept, missing ones generated', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const a = client(app, tokens.writeA)
  const record = (await a.post(intake)).json()
  const [first, second] = record.items
  const res = await a.patch(record.id, {
    items: [{ ...second, question: 'Allergies?' }, { type: 'year', question: 'Born' }, first],
  })
  t.equal(res.statusCode, 200)
  const items = res.json().items
  t.equal(items.length, 3, 'the third original item is gone')
  t.same(items[0], { ...second, question: 'Allergies?' })
  t.match(items[1], { id: /^[0-9a-f]{24}$/, type: 'year', question: 'Born' })
  t.same(items[2], first, 'reordered as sent')
  t.notOk([first.id, second.id].includes(items[1].id))
  t.same(res.json().tags, intake.tags, 'tags untouched')
  const dup = await a.patch(record.id, { items: [first, first] })
  t.equal(dup.statusCode, 400)
  t.match(dup.json().message, /body\.items\[1\]\.id '.+' repeats body\.items\[0\]\.id/)
})

t.test('null removes an optional field; required fields cannot be removed', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const a = client(app, tokens.writeA)
  const record = (await a.post(full)).json()
  const cleared = ['subtype', 'name', 'description', 'template', 'items', 'tags', 'meta', 'config']
  const res = await a.patch(record.id, Object.fromEntries(cleared.map((name) => [name, null])))
  t.equal(res.statusCode, 200)
  for (const name of cleared) t.notOk(name in res.json(), `${name} removed`)
  t.equal((await a.list('tags=vitals')).json().total, 0, 'removed tags no longer match')
  for (const name of ['type', 'createdAt', 'facility', 'hide']) {
    const bad = await a.patch(record.id, { [name]: null })
    t.equal(bad.statusCode, 400, `${name}: null`)
    t.match(bad.json().message, new RegExp(`body\\.${name} must be`))
  }
})

t.test('tags are kept in sync with the tag index', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const a = client(app, tokens.writeA)
  const record = (await a.post(intake)).json()
  await a.patch(record.id, { tags: ['cardio', 'vitals'] })
  t.equal((await a.list('tags=vitals')).json().total, 1)
  t.equal((await a.list('tags=cardio')).json().total, 1)
  t.equal((await a.list('tags=restriction::ward-3')).json().total, 0, 'a dropped tag no longer matches')
  const rows = app.db.prepare('SELECT tag FROM form_template_tags WHERE template_id = ? ORDER BY tag').all(record.id)
  t.same(rows, [{ tag: 'cardio' }, { tag: 'vitals' }])
  await a.patch(record.id, { name: 'no tag change' })
  t.equal((await a.list('tags=cardio')).json().total, 1, 'a patch without tags leaves them')
})

t.test('hide and unhide, each twice in a row', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const a = client(app, tokens.writeA)
  const record = (await a.post(intake)).json()
  const hidden = await a.patch(record.id, { hide: true })
  t.equal(hidden.statusCode, 200)
  t.match(hidden.json(), { hiddenAt: Number, hiddenBy: 'nurse-a' })
  t.equal(hidden.headers.etag, '"2"')

  const again = await client(app, tokens.adminA).patch(record.id, { hide: true })
  t.same(again.json(), hidden.json(), 'hiding again keeps the first hiddenAt and hiddenBy')
  t.equal(again.headers.etag, '"2"', 'and is not a new version')

  const shown = await a.patch(record.id, { hide: false })
  t.same(shown.json(), record, 'hide: false clears both fields')
  t.equal(shown.headers.etag, '"3"')
  const shownAgain = await a.patch(record.id, { hide: false })
  t.same(shownAgain.json(), record)
  t.equal(shownAgain.headers.etag, '"3"')

  const withName = await a.patch(record.id, { hide: true, name: 'Old intake' })
  t.match(withName.json(), { name: 'Old intake', hiddenBy: 'nurse-a' }, 'hide combines with other fields')
  const operations = app.audit.list({ resource: 'form-templates', limit: 100 }).map((e) => e.operation)
  t.same(operations, ['create', 'patch', 'patch', 'patch'], 'no-op patches are not audited')
})

t.test('an empty or unchanged patch changes nothing; bad patches are 400', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const a = client(app, tokens.writeA)
  const record = (await a.post(full)).json()
  const empty = await a.patch(record.id, {})
  t.same(empty.json(), record)
  t.equal(empty.headers.etag, '"1"')
  const same = await a.patch(record.id, { name: record.name, tags: record.tags, items: record.items, meta: { a: 1 } })
  t.equal(same.headers.etag, '"1"', 'the same values are not a new version')
  const bad: [unknown, RegExp][] = [
    [{ hide: 'yes' }, /body\.hide must be boolean/],
    [{ hide: 1 }, /body\.hide must be boolean/],
    [{ type: '' }, /body\.type must NOT have fewer than 1/],
    [{ name: 7 }, /body\.name must be string/],
    [{ id: record.id }, /unknown property 'id'/],
    [{ createdBy: 'x' }, /unknown property 'createdBy'/],
    [{ hiddenAt: 1 }, /unknown property 'hiddenAt'/],
    [{ hiddenBy: 'x' }, /unknown property 'hiddenBy'/],
    [{ nmae: 'x' }, /unknown property 'nmae'/],
    [{ items: [{ type: 'checklist' }] }, /body\.items\[0\]\.choices must have at least one/],
    [{ tags: ['a', 'a'] }, /body\.tags must NOT have duplicate items/],
  ]
  for (const [body, message] of bad) {
    const res = await a.patch(record.id, body)
    t.equal(res.statusCode, 400, JSON.stringify(body))
    t.match(res.json(), { code: 'FST_ERR_VALIDATION', message })
  }
  t.equal((await a.get(record.id)).headers.etag, '"1"', 'the refused patches changed nothing')
  t.equal(app.audit.list({ resource: 'form-templates', limit: 100 }).length, 1)
})

t.test('If-Match guards patch and delete', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const a = client(app, tokens.writeA)
  const record = (await a.post(intake)).json()
  await a.patch(record.id, { name: 'v2' })
  const stale = await a.patch(record.id, { name: 'v3' }, { 'if-match': '"1"' })
  t.equal(stale.statusCode, 412)
  t.match(stale.json(), { code: 'PRECONDITION_FAILED' })
  t.equal((await a.remove(record.id, { 'if-match': '"1"' })).statusCode, 412)
  t.equal((await a.get(record.id)).json().name, 'v2', 'the refused requests changed nothing')
  const fresh = await a.patch(record.id, { name: 'v3' }, { 'if-match': '"2"' })
  t.equal(fresh.statusCode, 200)
  t.equal(fresh.headers.etag, '"3"')
  t.equal((await a.patch(record.id, { name: 'v4' }, { 'if-match': '*' })).statusCode, 200)
  t.equal((await a.remove(record.id, { 'if-match': '"9", "4"' })).statusCode, 200)
})

t.test('facility in a patch: only an unbound token may move a template', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const a = client(app, tokens.writeA)
  const record = (await a.post(intake)).json()
  t.equal((await a.patch(record.id, { facility: 'A' })).headers.etag, '"1"', 'naming its own facility is a no-op')
  const moved = await a.patch(record.id, { facility: 'B' })
  t.equal(moved.statusCode, 403)
  t.match(moved.json(), { code: 'FACILITY_FORBIDDEN' })
  const byAdmin = await client(app, tokens.write).patch(record.id, { facility: 'B' })
  t.equal(byAdmin.statusCode, 200)
  t.equal(byAdmin.json().facility, 'B')
  t.equal((await a.get(record.id)).statusCode, 404, 'A no longer sees it')
  t.equal((await client(app, tokens.writeB).get(record.id)).statusCode, 200, 'B does')
})

t.test('simultaneous writes share a commit but stay apart: one If-Match wins, the rest get 412', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const a = client(app, tokens.writeA)
  // created together: one batch of the write queue, each its own record and audit entry
  const created = await Promise.all(Array.from({ length: 10 }, (_, i) => a.post({ ...intake, name: `form ${i}` })))
  t.same(
    created.map((r) => r.statusCode),
    Array(10).fill(200),
  )
  const ids = created.map((r) => r.json().id)
  t.equal(new Set(ids).size, 10, 'ten records')
  const patches = await Promise.all(
    Array.from({ length: 10 }, (_, i) => a.patch(ids[0], { name: `rename ${i}` }, { 'if-match': '"1"' })),
  )
  t.same(patches.map((r) => r.statusCode).sort(), [200, ...Array(9).fill(412)], 'exactly one rename saw version 1')
  const winner = patches.find((r) => r.statusCode === 200)?.json()
  t.same((await a.get(ids[0])).json(), winner, 'the stored record is the winner')
  // one removal of a record wins, the other finds nothing
  const removals = await Promise.all([a.remove(ids[1]), a.remove(ids[1])])
  t.same(removals.map((r) => r.statusCode).sort(), [200, 404])
  const audit = app.audit.list({ limit: 100 }).filter((e) => e.resource === 'form-templates')
  t.equal(audit.length, 10 + 1 + 1, 'ten creates, one patch, one delete were audited')
})
