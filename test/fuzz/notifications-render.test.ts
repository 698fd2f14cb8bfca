import assert from 'node:assert/strict'
import fc from 'fast-check'
import qs from 'qs'
import t from 'tap'
import { bearer } from '../helper.js'
import {
  anyBodyArb,
  authorizationArb,
  bodyOptions,
  buildFuzzApp,
  check,
  hugeStringArb,
  idArb,
  junkValueArb,
  mutatedBodyArb,
  NUM_RUNS,
  poolId,
  queryStringArb,
  seedRecords,
  send,
} from './fuzz-helper.js'

// Notifications by id (get, mark seen, and the methods they do not have) and the print
// rendering of form templates, when that route exists: never a 5xx, errors in the contract's
// shape, nothing changed by a 4xx.

t.test('/notifications/:id and /notifications/:id/seen with any id, method and body', async (t) => {
  const { app, tokens, config } = await buildFuzzApp(t)
  await seedRecords(app, tokens)
  const ids = () => app.db.prepare('SELECT id FROM notifications ORDER BY id').pluck().all() as string[]
  // the two real operations weigh more, so every run reaches their success path (about one in five
  // fuzzed requests carries a usable token and id, and a mark needs no body or an empty one)
  const requestArb = fc.constantFrom(
    ['GET', ''],
    ['GET', ''],
    ['POST', '/seen'],
    ['POST', '/seen'],
    ['POST', '/seen'],
    ['GET', '/seen'],
    ['PATCH', ''],
    ['DELETE', ''],
    ['PUT', ''],
    ['POST', ''],
  )
  const statuses = new Map<string, number>()
  await check(
    fc.asyncProperty(
      requestArb,
      authorizationArb(tokens),
      idArb(),
      fc.option(anyBodyArb(junkValueArb(config.BODY_LIMIT), config.BODY_LIMIT), { freq: 2 }),
      async ([method, suffix], authorization, id, body) => {
        const options = body === null ? { headers: {} } : bodyOptions(body)
        const res = await send(app, {
          method: method as 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT',
          url: `/notifications/${id(ids())}${suffix}`,
          ...options,
          headers: { ...options.headers, ...authorization },
        })
        const key = `${method} ${suffix} ${res.statusCode}`
        statuses.set(key, (statuses.get(key) ?? 0) + 1)
      },
    ),
    undefined,
    // Drawn marks and reads succeeded 1 to 11 times in 200 runs (a run with none would check no
    // success): a mark and a read by a token that sees every notification, in every run.
    [
      [['POST', '/seen'], bearer(tokens.admin), poolId(0), null],
      [['GET', ''], bearer(tokens.read), poolId(1), null],
    ],
  )
  t.ok(statuses.get('POST /seen 200'), 'some were marked seen')
  t.ok(statuses.get('GET  200'), 'some were read')
  t.comment(`statuses: ${JSON.stringify(Object.fromEntries(statuses))}`)
})

t.test('GET and POST /form-templates/:id/render with any id, query and body', async (t) => {
  const { app, tokens, config } = await buildFuzzApp(t, { RENDER_TIMEOUT_MS: 200 })
  await seedRecords(app, tokens)
  // Each layout with what pug and ejs must make of it, worked out by hand from the two languages
  // (SOURCE: the text comes back as it is, nothing in it ran; ERROR: a 4xx, never a 200).
  const SOURCE = Symbol('source')
  const ERROR = Symbol('error')
  const layouts: [string, string | symbol, string | symbol][] = [
    ['h1= name\neach item in items || []\n  p= item.question', '<h1>layout 0</h1><p></p>', SOURCE],
    [
      '<h1><%= name %></h1><% (items || []).forEach(function (i) { %><p><%= i.type %></p><% }) %>',
      SOURCE,
      '<h1>layout 1</h1><p>date</p>',
    ],
    ['p= typeof answers', '<p>undefined</p>', SOURCE],
    ['- throw new Error("boom")', ERROR, SOURCE],
    ['p= process.exit(1)', ERROR, SOURCE],
    ['<%= require("fs").readFileSync("/etc/passwd") %>', SOURCE, ERROR],
    ['p(', ERROR, SOURCE],
    ['<% if (', SOURCE, ERROR],
    ['- while (true) {}', ERROR, SOURCE],
  ]
  const expected = new Map<string, { pug: string | symbol; ejs: string | symbol; source: string }>()
  for (const [i, [template, pug, ejs]] of layouts.entries()) {
    const token = [tokens.writeA, tokens.writeB, tokens.write][i % 3] as string
    const res = await app.inject({
      method: 'POST',
      url: '/form-templates',
      headers: bearer(token),
      payload: { type: 'print', name: `layout ${i}`, template, items: [{ id: 'q1', type: 'date' }] },
    })
    expected.set((res.json() as { id: string }).id, { pug, ejs, source: template })
  }
  const ids = () => app.db.prepare('SELECT id FROM form_templates ORDER BY id').pluck().all() as string[]
  const validBody = fc.record(
    {
      engine: fc.constantFrom('pug', 'ejs', 'auto', 'jade', ''),
      data: fc.dictionary(fc.constantFrom('answers', 'name', 'patient', 'items', 'x'), fc.jsonValue({ maxDepth: 3 })),
    },
    { requiredKeys: [] },
  )
  const statuses = new Map<string, number>()
  await check(
    fc.asyncProperty(
      fc.constantFrom('GET', 'POST', 'POST'),
      fc.oneof(authorizationArb(tokens), fc.constant(bearer(tokens.read))),
      fc.oneof(
        idArb(),
        fc.constantFrom(...expected.keys()).map((layout) => Object.assign(() => layout, { toString: () => layout })),
      ),
      fc.oneof(queryStringArb(['engine', 'format', 'data', 'answers', 'name'], ids), {
        weight: 2,
        arbitrary: fc.constantFrom('', 'engine=pug', 'engine=ejs', 'engine=jade'),
      }),
      fc.oneof(
        anyBodyArb(
          mutatedBodyArb(validBody, ['engine', 'data'], ['template', 'id', 'source'], config.BODY_LIMIT),
          config.BODY_LIMIT,
        ),
        // Well-formed requests, so that many render: data up to the body limit, just under and over it.
        {
          weight: 2,
          arbitrary: fc
            .record({
              engine: fc.constantFrom('pug', 'ejs', 'jade'),
              data: fc.record({ answers: fc.jsonValue({ maxDepth: 2 }), note: hugeStringArb(config.BODY_LIMIT) }),
            })
            .map((json) => ({ json }) as { json: unknown }),
        },
      ),
      async (method, authorization, id, query, body) => {
        const options = method === 'GET' ? { headers: {} } : bodyOptions(body)
        const templateId = id(ids())
        // Rendering changes nothing, whichever method: the database is compared after every answer.
        const res = await send(app, {
          method: method as 'GET' | 'POST',
          url: `/form-templates/${templateId}/render?${query}`,
          ...options,
          headers: { ...options.headers, ...authorization },
        })
        const key = `${method} ${res.statusCode}`
        statuses.set(key, (statuses.get(key) ?? 0) + 1)
        if (res.statusCode !== 200) return
        const layout = expected.get(templateId)
        assert.ok(layout, `a 200 for ${templateId}, which is no layout`)
        const asked =
          method === 'GET'
            ? qs.parse(query).engine
            : (JSON.parse(String((options as { payload?: unknown }).payload)) as { engine?: string }).engine
        const engine = asked === 'ejs' ? 'ejs' : 'pug'
        const want = layout[engine] === SOURCE ? layout.source : layout[engine]
        assert.notEqual(want, ERROR, `${engine} rendered ${JSON.stringify(layout.source)}, which must fail`)
        assert.equal(res.body, want, `${engine} rendering of ${JSON.stringify(layout.source)}`)
        assert.match(String(res.headers['content-type']), /^text\/html/)
      },
    ),
    Math.min(NUM_RUNS, 150),
    // Every layout in both engines, by GET and by POST, in every run: drawn requests answered GET 200
    // and POST 413 only 7 to 9 times in 150 runs, and a run with none of them would compare none.
    [
      ...[...expected.keys()].flatMap((layout) => {
        const id = Object.assign(() => layout, { toString: () => layout })
        return ['pug', 'ejs'].flatMap(
          (engine): ['GET' | 'POST', Record<string, string>, typeof id, string, { json: unknown }][] => [
            ['GET', bearer(tokens.read), id, `engine=${engine}`, { json: null }],
            ['POST', bearer(tokens.read), id, '', { json: { engine, data: { name: 'x' } } }],
          ],
        )
      }),
      [
        'POST',
        bearer(tokens.read),
        poolId(0),
        '',
        { json: { engine: 'pug', data: { answers: null, note: 'x'.repeat(config.BODY_LIMIT + 1) } } },
      ],
    ],
  )
  for (const key of ['GET 200', 'POST 200', 'POST 422', 'GET 422', 'POST 413'])
    t.ok(statuses.get(key), `some answered ${key}`)
  t.ok((statuses.get('GET 200') ?? 0) + (statuses.get('POST 200') ?? 0) >= 15, 'at least 15 renders compared')
  t.comment(`statuses: ${JSON.stringify(Object.fromEntries(statuses))}`)
})
