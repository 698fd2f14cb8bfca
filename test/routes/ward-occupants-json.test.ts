import assert from 'node:assert/strict'
import fc from 'fast-check'
import t from 'tap'
import { jsonRecord } from '../../db/query/list.js'
import { bearer, buildTestApp } from '../helper.js'
import { propertyRuns } from '../property-runs.js'

/**
 * GET by id and lists send JSON that SQLite writes (db/list.ts, jsonRecordSql); create and patch
 * answer objects that Fastify serializes through the response schema. Whatever the text in the
 * record (quotes, backslashes, control characters, any Unicode), both must say the same thing.
 */

const text = fc.string({ minLength: 1, maxLength: 24, unit: 'binary' })
const input = fc.record(
  {
    encounter: text,
    bed: text,
    occupiedBy: text,
    room: text,
    provider: text,
    facility: text,
    createdAt: fc.integer({ min: 0, max: 8_640_000_000_000_000 }),
  },
  { requiredKeys: ['encounter', 'bed', 'occupiedBy'] },
)
const FIELDS = [
  'createdAt',
  'createdBy',
  'facility',
  'encounter',
  'room',
  'bed',
  'provider',
  'occupiedAt',
  'occupiedBy',
]

t.test('records written by SQLite equal the records serialized by Fastify', async (t) => {
  const { app, tokens } = await buildTestApp(t, { BED_POLICY: 'shared' })
  const headers = bearer(tokens.write)
  await fc.assert(
    fc.asyncProperty(input, fc.subarray(FIELDS), fc.boolean(), async (body, selected, discharge) => {
      // Assertions that throw, so that fast-check sees a failure and shrinks it.
      const t0 = Date.now()
      const created = await app.inject({ method: 'POST', url: '/ward-occupants', headers, payload: body })
      assert.equal(created.statusCode, 200, created.body)
      const answer = created.json()
      // What the record must be: the body sent, plus what the server owns (the caller, the time of the write).
      const now = (value: unknown) => typeof value === 'number' && value >= t0 && value <= Date.now()
      assert.ok(now(answer.occupiedAt), 'occupiedAt defaults to the time of the write')
      if (body.createdAt === undefined) assert.ok(now(answer.createdAt), 'createdAt defaults to the time of the write')
      assert.match(answer.id, /^[0-9a-f]{24}$/)
      let expected: Record<string, unknown> = {
        ...body,
        id: answer.id,
        createdBy: 'nurse-all',
        createdAt: body.createdAt ?? answer.createdAt,
        occupiedAt: answer.occupiedAt,
      }
      assert.deepEqual(answer, expected, 'create answers the record sent')
      if (discharge) {
        const patched = await app.inject({
          method: 'PATCH',
          url: `/ward-occupants/${answer.id}`,
          headers,
          payload: { discharge: true },
        })
        const after = patched.json()
        assert.ok(now(after.dischargedAt), 'dischargedAt is the time of the discharge')
        expected = { ...expected, dischargedAt: after.dischargedAt, dischargedBy: 'nurse-all' }
        assert.deepEqual(after, expected, 'patch answers the record discharged')
      }

      const got = await app.inject({ url: `/ward-occupants/${answer.id}`, headers })
      assert.equal(got.headers['content-type'], 'application/json; charset=utf-8')
      assert.deepEqual(got.json(), expected, 'get by id')

      const query = new URLSearchParams({ id: String(answer.id) })
      const listed = await app.inject({ url: `/ward-occupants?${query}`, headers })
      assert.equal(listed.headers['content-type'], 'application/json; charset=utf-8')
      assert.deepEqual(listed.json(), { wardOccupants: [expected], total: 1, limit: 100, skip: 0 }, 'list')

      const select = selected.map((name) => `$select[]=${name}`).join('&')
      const picked = await app.inject({ url: `/ward-occupants?${query}&${select}`, headers })
      const want = Object.fromEntries(
        Object.entries(expected).filter(([name]) => name === 'id' || selected.length === 0 || selected.includes(name)),
      )
      assert.deepEqual(picked.json().wardOccupants, [want], `$select ${selected.join(',')}`)
    }),
    { numRuns: propertyRuns(60) },
  )
})

t.test('values that look like JSON members stay as they are', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const headers = bearer(tokens.write)
  const tricky = ['","room":null', ',"room":null', '\\",\\"provider\\":null', 'x\\', '{"dischargedAt":null}', 'null']
  for (const [i, text] of tricky.entries()) {
    const body = { encounter: text, bed: `${text}-${i}`, occupiedBy: text, provider: text }
    const created = await app.inject({ method: 'POST', url: '/ward-occupants', headers, payload: body })
    const { id, createdAt, occupiedAt } = created.json()
    const expected = { ...body, id, createdAt, occupiedAt, createdBy: 'nurse-all' }
    t.same(created.json(), expected, `create: ${JSON.stringify(text)}`)
    const got = await app.inject({ url: `/ward-occupants/${id}`, headers })
    t.same(got.json(), expected, `get: ${JSON.stringify(text)}`)
    const listed = await app.inject({ url: `/ward-occupants?id=${id}`, headers })
    t.same(listed.json().wardOccupants, [expected], `list: ${JSON.stringify(text)}`)
  }
})

t.test('a JSON record must start with a required field', async (t) => {
  t.throws(() => jsonRecord([{ name: 'room', column: 'room', optional: true }]), /required/)
  t.equal(jsonRecord([{ name: 'id', column: 'id', optional: false }]).clean('{"id":"a"}'), '{"id":"a"}')
})

t.test('empty pages and $limit=0 are well-formed JSON', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const headers = bearer(tokens.readA)
  t.same((await app.inject({ url: '/ward-occupants', headers })).json(), {
    wardOccupants: [],
    total: 0,
    limit: 100,
    skip: 0,
  })
  await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(tokens.writeA),
    payload: { encounter: 'e', bed: 'b', occupiedBy: 'p' },
  })
  t.same((await app.inject({ url: '/ward-occupants?$limit=0', headers })).json(), {
    wardOccupants: [],
    total: 1,
    limit: 0,
    skip: 0,
  })
  t.same((await app.inject({ url: '/ward-occupants?$skip=5', headers })).json().wardOccupants, [])
})
