import t from 'tap'
import { bearer, buildTestApp } from '../helper.js'
import { assertContract, snapshot } from './fuzz-helper.js'

// What the fuzzers found, pinned down as plain examples (each was a 500, or a wrong error label).

t.test('$or and $and take at most 100 entries (SQLite refuses expressions 1000 deep)', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const branches = (key: string, n: number) => Array.from({ length: n }, (_, i) => `${key}[${i}][id]=x${i}`).join('&')
  for (const key of ['$or', '$and']) {
    const ok = await app.inject({ url: `/ward-occupants?${branches(key, 100)}`, headers: bearer(tokens.read) })
    t.equal(ok.statusCode, 200, `${key} with 100 entries`)
    for (const n of [101, 999]) {
      const res = await app.inject({ url: `/form-templates?${branches(key, n)}`, headers: bearer(tokens.read) })
      t.equal(res.statusCode, 400, `${key} with ${n} entries`)
      t.match(res.json(), { code: 'INVALID_QUERY', message: `${key} takes at most 100 entries` })
    }
  }
})

t.test('meta and config nest at most 64 levels (deeper overflowed JSON.stringify)', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const arrays = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`
  const post = (field: string, depth: number) =>
    app.inject({
      method: 'POST',
      url: '/form-templates',
      headers: { ...bearer(tokens.write), 'content-type': 'application/json' },
      // {"a": n arrays} nests n + 1 levels.
      payload: `{"type":"x","${field}":{"a":${arrays(depth - 1)}}}`,
    })
  t.equal((await post('meta', 64)).statusCode, 200, '64 levels are kept')
  const created = await app.inject({ url: '/form-templates', headers: bearer(tokens.read) })
  for (const [field, depth] of [
    ['meta', 65],
    ['config', 10_000],
    ['meta', 200_000],
  ] as const) {
    const before = snapshot(app.db)
    const res = await post(field, depth)
    t.equal(res.statusCode, 400, `${field} nested ${depth} deep`)
    t.match(res.json(), {
      code: 'FST_ERR_VALIDATION',
      message: `body.${field} is nested too deeply: ${depth} levels, at most 64`,
    })
    t.ok(snapshot(app.db) === before, 'nothing was written')
  }
  const id = created.json().formTemplates[0].id
  const patch = await app.inject({
    method: 'PATCH',
    url: `/form-templates/${id}`,
    headers: { ...bearer(tokens.write), 'content-type': 'application/json' },
    payload: `{"config":{"a":${arrays(9_999)}}}`,
  })
  t.equal(patch.statusCode, 400, 'a patch is refused the same way')
})

t.test('routing errors (bad percent-encoding, an over-long id) have the contract shape', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const cases: [string, number, string, string][] = [
    [`/ward-occupants/${'a'.repeat(101)}`, 414, 'URI Too Long', 'FST_ERR_MAX_PARAM_LENGTH'],
    ['/form-templates/%ZZ', 400, 'Bad Request', 'FST_ERR_BAD_URL'],
  ]
  for (const [url, status, error, code] of cases) {
    const res = await app.inject({ url, headers: bearer(tokens.read) })
    assertContract(res, url)
    t.equal(res.statusCode, status, url)
    t.match(res.json(), { statusCode: status, error, code })
  }
})
