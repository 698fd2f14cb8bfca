import t, { type Test } from 'tap'
import { bearer, buildTestApp, type TestApp } from '../helper.js'

// /audit pages like every other list ($limit, $skip), beside its own cursor (after); its old
// `limit` still works, and `limit` beside a `$limit` of another value is refused.

async function seqs(app: TestApp, token: string, query: string): Promise<number[]> {
  const res = await app.inject({ url: `/audit?${query}`, headers: bearer(token) })
  if (res.statusCode !== 200) throw new Error(`${query}: ${res.statusCode} ${res.body}`)
  return (res.json() as { entries: { seq: number }[] }).entries.map((entry) => entry.seq)
}

async function withChanges(t: Test, count: number) {
  const built = await buildTestApp(t, { AUDIT_READS: true })
  for (let i = 0; i < count; i++) {
    const res = await built.app.inject({
      method: 'POST',
      url: '/form-templates',
      headers: bearer(built.tokens.write),
      payload: { type: 'intake', name: `form ${i}` },
    })
    if (res.statusCode !== 200) throw new Error(res.body)
  }
  return built
}

t.test('$limit and $skip page the audit trail as they page the other lists', async (t) => {
  const { app, tokens } = await withChanges(t, 5)
  const all = await seqs(app, tokens.admin, '')
  t.equal(all.length, 5)
  t.same(await seqs(app, tokens.admin, '$limit=2'), all.slice(0, 2))
  t.same(await seqs(app, tokens.admin, '$limit=2&$skip=2'), all.slice(2, 4))
  t.same(await seqs(app, tokens.admin, '$skip=4'), all.slice(4))
  t.same(await seqs(app, tokens.admin, '$skip=9'), [], 'past the end: an empty page')
  t.same(
    await seqs(app, tokens.admin, `after=${all[0]}&$limit=2&$skip=1`),
    all.slice(2, 4),
    '$skip counts after `after`',
  )
  t.same(await seqs(app, tokens.admin, '$limit=0'), [])
  t.same(await seqs(app, tokens.admin, '$limit=99999999'), all, 'a larger limit is lowered, not refused')
})

t.test('the deprecated `limit` still pages; beside $limit it must say the same', async (t) => {
  const { app, tokens } = await withChanges(t, 3)
  const all = await seqs(app, tokens.admin, '')
  t.same(await seqs(app, tokens.admin, 'limit=2'), all.slice(0, 2), 'limit alone')
  t.same(await seqs(app, tokens.admin, 'limit=2&$limit=2'), all.slice(0, 2), 'both, the same value')
  t.same(await seqs(app, tokens.admin, 'limit=02&$limit=2'), all.slice(0, 2), 'the same number, spelt otherwise')
  t.same(await seqs(app, tokens.admin, 'limit=1&$skip=1'), all.slice(1, 2), 'limit with $skip')
  const res = await app.inject({ url: '/audit?limit=1&$limit=2', headers: bearer(tokens.admin) })
  t.equal(res.statusCode, 400)
  t.match(res.json(), {
    code: 'INVALID_QUERY',
    message: 'limit=1 and $limit=2 disagree: give $limit only (limit is its deprecated alias)',
  })
})

t.test('bad paging values get a clear 400', async (t) => {
  const { app, tokens } = await withChanges(t, 1)
  for (const query of ['$limit=abc', '$limit=-1', '$skip=1.5', '$skip=', '$limit=1&$limit=2', 'limit=12345']) {
    const res = await app.inject({ url: `/audit?${query}`, headers: bearer(tokens.admin) })
    t.equal(res.statusCode, 400, query)
    t.match(res.json().message, /\$limit|\$skip|limit/, `${query}: names the parameter`)
  }
})

t.test('the read log pages the same way', async (t) => {
  const { app, tokens } = await withChanges(t, 0)
  for (let i = 0; i < 4; i++) await app.inject({ url: '/ward-occupants', headers: bearer(tokens.read) })
  // Read-log entries are stored in the next group commit: a job queued now runs after them.
  await app.writes.run(() => undefined)
  const all = await seqs(app, tokens.admin, 'kind=reads')
  t.equal(all.length, 4)
  t.same(await seqs(app, tokens.admin, 'kind=reads&$limit=2&$skip=1'), all.slice(1, 3))
  t.same(await seqs(app, tokens.admin, 'kind=reads&limit=3'), all.slice(0, 3))
  const res = await app.inject({ url: '/audit?kind=reads&limit=3&$limit=1', headers: bearer(tokens.admin) })
  t.equal(res.statusCode, 400)
})

t.test('the OpenAPI document shows $limit and $skip, and limit as deprecated', async (t) => {
  const { app } = await buildTestApp(t)
  const document = (await app.inject('/openapi.json')).json() as {
    paths: Record<string, { get: { parameters: { name: string; in: string; deprecated?: boolean }[] } }>
  }
  const parameters = document.paths['/audit']?.get.parameters ?? []
  const byName = new Map(parameters.filter((p) => p.in === 'query').map((p) => [p.name, p]))
  t.ok(byName.has('$limit'), '$limit')
  t.ok(byName.has('$skip'), '$skip')
  t.equal(byName.get('limit')?.deprecated, true, 'limit is marked deprecated')
  t.notOk(byName.get('$limit')?.deprecated, '$limit is not')
})
