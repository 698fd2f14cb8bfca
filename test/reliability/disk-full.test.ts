import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { bearer } from '../helper.js'
import { buildLoggedApp } from './fault-helpers.js'

/**
 * A full disk, made with SQLite's max_page_count (no root needed; `npm run fault-test` does the same
 * on a real full file system). The oracle is a second connection reading the file.
 */
t.test('a full disk: 507 STORAGE_FULL, /health 503, one error log, reads go on, recovery by itself', async (t) => {
  const path = join(t.testdir(), 'full.db')
  const { app, token, errors, lines } = await buildLoggedApp(t, { DATABASE_PATH: path })
  const write = bearer(token('nurse', 'write'))
  const admit = (bed: string, key?: string) =>
    app.inject({
      method: 'POST',
      url: '/ward-occupants',
      headers: key ? { ...write, 'idempotency-key': key } : write,
      payload: { encounter: `e-${bed}`, bed, occupiedBy: 'p', room: 'r'.repeat(200), provider: 'd'.repeat(200) },
    })
  const first = await admit('B-0')
  t.equal(first.statusCode, 200)
  const acknowledged = [first.json().id as string]

  const pages = app.db.pragma('page_count', { simple: true }) as number
  app.db.pragma(`max_page_count = ${pages + 8}`)
  let refused = null as Awaited<ReturnType<typeof admit>> | null
  for (let i = 1; i < 2000 && !refused; i++) {
    const res = await admit(`B-${i}`)
    if (res.statusCode === 200) acknowledged.push(res.json().id)
    else refused = res
  }
  if (!refused) throw new Error('the database never filled up')
  t.equal(refused.statusCode, 507, 'answered 507 Insufficient Storage')
  t.match(refused.json(), { statusCode: 507, error: 'Insufficient Storage', code: 'STORAGE_FULL' })
  t.match(refused.json().message, /disk .* is full/, 'the message says what happened')
  t.notMatch(refused.body, /SQLITE|INSERT/, 'no SQL or SQLite internals in the answer')

  // The fault's text is for an admin (docs/API.md); everyone gets its word and code.
  const health = await app.inject({ url: '/health', headers: bearer(token('admin-1', 'admin')) })
  t.equal(health.statusCode, 503, '/health answers 503 while it lasts')
  t.match(health.json(), { status: 'unavailable', database: 'full', code: 'SQLITE_FULL' })
  t.match(health.json().message, /cannot take writes/)

  // More writes while full (one with a key: a 507 is never stored): each refused, none logged again.
  for (let i = 0; i < 5; i++) t.equal((await admit(`again-${i}`, i === 0 ? 'key-1' : undefined)).statusCode, 507)
  t.equal(errors().length, 1, 'one error log for the whole episode')
  t.match(errors()[0], { fault: 'full', code: 'SQLITE_FULL', file: path })
  t.match(errors()[0]?.msg, path, 'the log names the file')

  const list = await app.inject({ url: '/ward-occupants?$limit=1000&$select[]=id', headers: write })
  t.equal(list.statusCode, 200, 'reads go on')
  t.same(
    list.json().wardOccupants.map((r: { id: string }) => r.id),
    acknowledged,
  )
  t.equal((await app.inject({ url: `/ward-occupants/${acknowledged[0]}`, headers: write })).statusCode, 200)

  // Space is freed: the next write succeeds without a restart, and /health follows.
  app.db.pragma('max_page_count = 1073741823')
  const retried = await admit('again-0', 'key-1')
  t.equal(retried.statusCode, 200, 'a retry with the same key after the 507 makes the change now')
  acknowledged.push(retried.json().id)
  t.same((await app.inject('/health')).json(), { status: 'ok', database: 'ok' }, '/health is ok again')
  t.ok(
    lines.some((l) => /takes writes again/.test(l.msg)),
    'the end of the episode is logged',
  )
  t.equal(errors().length, 1)

  const oracle = new BetterSqlite3(path, { readonly: true })
  t.teardown(() => oracle.close())
  const stored = oracle.prepare('SELECT id FROM ward_occupants ORDER BY id').pluck().all()
  t.same(stored, [...acknowledged].sort(), 'every acknowledged write is in the file, no refused one')
  const audited = oracle.prepare(`SELECT count(*) FROM audit_log WHERE resource = 'ward-occupants'`).pluck().get()
  t.equal(audited, acknowledged.length, 'one audit entry per acknowledged write')
  t.equal(oracle.pragma('integrity_check', { simple: true }), 'ok')
})

t.test('with AUDIT_READS, a full disk refuses the read whose entry cannot be written: 507, no record', async (t) => {
  const path = join(t.testdir(), 'full-reads.db')
  const { app, token } = await buildLoggedApp(t, { DATABASE_PATH: path, AUDIT_READS: true })
  const write = bearer(token('nurse', 'write'))
  const read = bearer(token('viewer', 'read'))
  const created = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: write,
    payload: { encounter: 'e-1', bed: 'B-1', occupiedBy: 'patient-full' },
  })
  const id = created.json().id as string
  const pages = app.db.pragma('page_count', { simple: true }) as number
  app.db.pragma(`max_page_count = ${pages + 2}`)
  let answered = 0
  let refused = null as Awaited<ReturnType<typeof app.inject>> | null
  for (let i = 0; i < 20_000 && !refused; i++) {
    const res = await app.inject({ url: `/ward-occupants/${id}`, headers: read })
    if (res.statusCode === 200) answered++
    else refused = res
  }
  if (!refused) throw new Error('the database never filled up')
  t.equal(refused.statusCode, 507, "the same answer as a write's")
  t.match(refused.json(), { statusCode: 507, error: 'Insufficient Storage', code: 'STORAGE_FULL' })
  t.notMatch(refused.body, /patient-full/, 'no record left unaudited')
  t.notOk(refused.headers.etag, 'not even its version')

  app.db.pragma('max_page_count = 1073741823')
  t.equal((await app.inject({ url: `/ward-occupants/${id}`, headers: read })).statusCode, 200, 'space freed: answered')
  const oracle = new BetterSqlite3(path, { readonly: true })
  t.teardown(() => oracle.close())
  const logged = oracle.prepare('SELECT count(*) FROM read_log WHERE record_id = ? AND status = 200').pluck().get(id)
  t.equal(logged, answered + 1, 'one entry per answered read, none for the refused one')
})
