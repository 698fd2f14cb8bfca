import Database from 'better-sqlite3'
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

t.test('the snapshot tells apart every change a refused request might make (the isolation oracle)', async (t) => {
  const db = new Database(':memory:')
  t.teardown(() => db.close())
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, r REAL, b BLOB, s TEXT)')
  const insert = db.prepare('INSERT INTO t VALUES (?, ?, ?, ?)')
  insert.run(1, 0.1, Buffer.from([0]), 'a\u0000b')
  insert.run(2, 0.3, Buffer.from([1, 2]), "x'y")
  const changes: [string, unknown[]][] = [
    // quote() stops at a NUL character: text after one must still count.
    ['UPDATE t SET s = ? WHERE id = 1', ['a\u0000c']],
    ['UPDATE t SET s = ? WHERE id = 1', ['a']],
    ['UPDATE t SET s = ? WHERE id = 1', ['\u0000']],
    ['UPDATE t SET s = ? WHERE id = 1', ['']],
    ['UPDATE t SET s = ? WHERE id = 1', [null]],
    ['UPDATE t SET s = ? WHERE id = 1', ['NULL']],
    ['UPDATE t SET s = ? WHERE id = 1', ['a,b\nc']],
    ['UPDATE t SET r = ? WHERE id = 2', [0.30000000000000004]],
    ['UPDATE t SET b = ? WHERE id = 2', [Buffer.from([1, 3])]],
    ['INSERT INTO t VALUES (3, NULL, NULL, NULL)', []],
    ['ALTER TABLE t ADD COLUMN z', []],
    ['UPDATE t SET z = 1 WHERE id = 3', []],
    ['CREATE TABLE u (x)', []],
    ['INSERT INTO u VALUES (1)', []],
    ['DELETE FROM t WHERE id = 3', []],
  ]
  for (const [sql, args] of changes) {
    const before = snapshot(db)
    t.equal(snapshot(db), before, `unchanged before: ${sql}`)
    db.prepare(sql).run(...args)
    t.not(snapshot(db), before, `${sql} ${JSON.stringify(args)}`)
  }
})
