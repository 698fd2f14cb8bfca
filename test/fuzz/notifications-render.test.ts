import fc from 'fast-check'
import t from 'tap'
import { bearer } from '../helper.js'
import {
  anyBodyArb,
  authorizationArb,
  bodyOptions,
  buildFuzzApp,
  check,
  idArb,
  junkValueArb,
  mutatedBodyArb,
  NUM_RUNS,
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
  )
  t.ok(statuses.get('POST /seen 200'), 'some were marked seen')
  t.ok(statuses.get('GET  200'), 'some were read')
  t.comment(`statuses: ${JSON.stringify(Object.fromEntries(statuses))}`)
})

t.test('GET and POST /form-templates/:id/render with any id, query and body', async (t) => {
  const { app, tokens, config } = await buildFuzzApp(t, { RENDER_TIMEOUT_MS: 200 })
  await seedRecords(app, tokens)
  const layouts = [
    'h1= name\neach item in items || []\n  p= item.question',
    '<h1><%= name %></h1><% (items || []).forEach(function (i) { %><p><%= i.type %></p><% }) %>',
    'p= answers && answers.q1',
    '- throw new Error("boom")',
    'p= process.exit(1)',
    '<%= require("fs").readFileSync("/etc/passwd") %>',
    'p(',
    '<% if (',
    '- while (true) {}',
  ]
  for (const [i, template] of layouts.entries()) {
    const token = [tokens.writeA, tokens.writeB, tokens.write][i % 3] as string
    await app.inject({
      method: 'POST',
      url: '/form-templates',
      headers: bearer(token),
      payload: { type: 'print', name: `layout ${i}`, template, items: [{ id: 'q1', type: 'date' }] },
    })
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
      authorizationArb(tokens),
      idArb(),
      queryStringArb(['engine', 'format', 'data', 'answers', 'name'], ids),
      anyBodyArb(
        mutatedBodyArb(validBody, ['engine', 'data'], ['template', 'id', 'source'], config.BODY_LIMIT),
        64_000,
      ),
      async (method, authorization, id, query, body) => {
        const options = method === 'GET' ? { headers: {} } : bodyOptions(body)
        const res = await send(
          app,
          {
            method: method as 'GET' | 'POST',
            url: `/form-templates/${id(ids())}/render?${query}`,
            ...options,
            headers: { ...options.headers, ...authorization },
          },
          false,
        )
        const key = `${method} ${res.statusCode}`
        statuses.set(key, (statuses.get(key) ?? 0) + 1)
      },
    ),
    Math.min(NUM_RUNS, 150),
  )
  t.comment(`statuses: ${JSON.stringify(Object.fromEntries(statuses))}`)
})
