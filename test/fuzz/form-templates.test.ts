import assert from 'node:assert/strict'
import fc from 'fast-check'
import t from 'tap'
import { ITEM_TYPES } from '../../schemas/form-templates.js'
import { bearer } from '../helper.js'
import {
  anyBodyArb,
  authorizationArb,
  bodyOptions,
  buildFuzzApp,
  check,
  deepNestingArb,
  idArb,
  ifMatchArb,
  mutatedBodyArb,
  oddStringArb,
  poolId,
  send,
} from './fuzz-helper.js'
import {
  assertDeleted,
  assertTemplateCreated,
  assertTemplatePatched,
  principalOf,
  rowOf,
  sentObject,
} from './write-oracle.js'

// Bodies and ids of /form-templates, items full of junk included: never a 5xx, errors in the
// contract's shape, nothing changes in the database when the answer is a 4xx, and a 200 stored
// exactly what was sent (write-oracle.ts reads the row back with plain SQL).

const SERVER_OWNED = ['id', 'createdBy', 'hiddenAt', 'hiddenBy']
const CREATE_FIELDS = ['type', 'createdAt', 'facility', 'subtype', 'name', 'description', 'template']
const CONTENT_FIELDS = ['items', 'tags', 'meta', 'config']
const ITEM_FIELDS = ['id', 'type', 'question', 'choices', 'required', 'order', 'set']

const textArb = fc.oneof(
  { weight: 4, arbitrary: fc.stringMatching(/^[A-Za-z0-9 :-]{1,12}$/) },
  { weight: 1, arbitrary: oddStringArb().filter((s) => s.length > 0) },
)
const timestampArb = fc.oneof(fc.nat(), fc.constantFrom(8_640_000_000_000_000, 8_640_000_000_000_001, -1, 0.5))
const validItemArb = fc.record(
  {
    id: fc.stringMatching(/^[a-z0-9-]{1,10}$/),
    type: fc.constantFrom(...ITEM_TYPES),
    question: textArb,
    choices: fc.uniqueArray(textArb, { minLength: 1, maxLength: 4 }),
    required: fc.boolean(),
    order: fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true })),
    set: textArb,
  },
  { requiredKeys: ['type', 'choices'] },
)
// Few item ids and choices, so repeats (400) are common; choice types sometimes without choices.
const clumsyItemArb = fc.record(
  {
    id: fc.constantFrom('q1', 'q2', 'allergies'),
    type: fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom(...ITEM_TYPES) },
      { weight: 1, arbitrary: fc.constantFrom('radio', 'Date', '', 'checklist ') },
    ),
    choices: fc.array(fc.constantFrom('none', 'mild', 'severe'), { maxLength: 3 }),
  },
  { requiredKeys: ['type'] },
)
const itemsArb = (bodyLimit: number) =>
  fc.oneof(
    { weight: 12, arbitrary: fc.uniqueArray(validItemArb, { selector: (item) => item.id, maxLength: 5 }) },
    { weight: 2, arbitrary: fc.array(clumsyItemArb, { maxLength: 5 }) },
    {
      weight: 2,
      arbitrary: fc.array(mutatedBodyArb(validItemArb, ITEM_FIELDS, ['hiddenAt', 'answer'], bodyLimit), {
        maxLength: 4,
      }),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(500, 501).map((n) => Array.from({ length: n }, () => ({ type: 'date' }))),
    },
  )
const freeObjectArb = fc.oneof(
  { weight: 12, arbitrary: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 }) },
  { weight: 1, arbitrary: fc.constantFrom(64, 65, 66).map((d) => nested(d)) },
  { weight: 1, arbitrary: deepNestingArb.map((deep) => ({ deep })) },
  { weight: 1, arbitrary: fc.constantFrom(65_000, 70_000).map((n) => ({ text: 'x'.repeat(n) })) },
)
/** An object whose nesting depth (the object itself counted) is `depth`. */
function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = {}
  for (let i = 1; i < depth; i++) value = { n: value }
  return value
}

function contentArbs(bodyLimit: number) {
  return {
    subtype: textArb,
    name: textArb,
    description: textArb,
    template: fc.constantFrom('h1= name', '<h1><%= name %></h1>', 'each item in items\n  p= item.question'),
    items: itemsArb(bodyLimit),
    tags: fc.oneof(
      { weight: 5, arbitrary: fc.uniqueArray(fc.constantFrom('vitals', 'pain', 'restriction::ward-3', 'x')) },
      { weight: 1, arbitrary: fc.array(fc.constantFrom('vitals', 'pain'), { maxLength: 3 }) },
    ),
    meta: freeObjectArb,
    config: freeObjectArb,
  }
}

const createArb = (bodyLimit: number) =>
  fc.record(
    { type: textArb, createdAt: timestampArb, facility: fc.constantFrom('A', 'B', 'C'), ...contentArbs(bodyLimit) },
    { requiredKeys: ['type'] },
  )

/** A patch; `owned`: with the fields the server owns too (createdAt, facility), which make it a 400. */
const patchArb = (bodyLimit: number, owned = true) => {
  const clearable = Object.fromEntries(
    Object.entries(contentArbs(bodyLimit)).map(([k, arb]) => [
      k,
      fc.oneof({ weight: 3, arbitrary: arb as fc.Arbitrary<unknown> }, { weight: 1, arbitrary: fc.constant(null) }),
    ]),
  )
  return fc.record(
    {
      type: textArb,
      ...(owned ? { createdAt: timestampArb, facility: fc.constantFrom('A', 'B', 'C') } : {}),
      hide: fc.boolean(),
      ...clearable,
    },
    { requiredKeys: [] },
  ) as fc.Arbitrary<Record<string, unknown>>
}

t.test('POST /form-templates with any body', async (t) => {
  const { app, tokens, config } = await buildFuzzApp(t)
  const limit = config.BODY_LIMIT
  const statuses = new Map<number, number>()
  await check(
    fc.asyncProperty(
      authorizationArb(tokens),
      fc.oneof(
        anyBodyArb(mutatedBodyArb(createArb(limit), [...CREATE_FIELDS, ...CONTENT_FIELDS], SERVER_OWNED, limit), limit),
        // Well-formed bodies, so that many writes succeed and are read back.
        createArb(limit).map((json) => ({ json }) as { json: unknown }),
      ),
      async (authorization, body) => {
        const options = bodyOptions(body)
        const t0 = Date.now()
        const res = await send(app, {
          method: 'POST',
          url: '/form-templates',
          ...options,
          headers: { ...options.headers, ...authorization },
        })
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
        if (res.statusCode === 200)
          assertTemplateCreated(app.db, res, sentObject(options.payload), principalOf(tokens, authorization), t0)
      },
    ),
  )
  t.ok(statuses.get(200), 'some creates succeeded')
  t.ok(statuses.get(400), 'some bodies were refused')
  t.comment(`statuses: ${JSON.stringify(Object.fromEntries(statuses))}`)
})

t.test('GET, PATCH and DELETE /form-templates/:id with any id, body and If-Match', async (t) => {
  const { app, tokens, config } = await buildFuzzApp(t)
  const limit = config.BODY_LIMIT
  const ids = () => (app.db.prepare('SELECT id FROM form_templates').pluck().all() as string[]).sort()
  let made = 0
  async function replenish() {
    while (ids().length < 6) {
      const token = [tokens.writeA, tokens.writeB, tokens.write][made++ % 3] as string
      const payload = { type: 'intake', tags: ['vitals'], items: [{ id: 'q1', type: 'date' }], meta: { a: 1 } }
      await app.inject({ method: 'POST', url: '/form-templates', headers: bearer(token), payload })
    }
  }
  const patchFields = ['type', 'createdAt', 'facility', 'hide', ...CREATE_FIELDS.slice(3), ...CONTENT_FIELDS]
  const statuses = new Map<string, number>()
  await check(
    fc.asyncProperty(
      fc.constantFrom('GET', 'PATCH', 'PATCH', 'PATCH', 'DELETE'),
      authorizationArb(tokens),
      idArb(),
      fc.oneof(
        anyBodyArb(mutatedBodyArb(patchArb(limit), patchFields, SERVER_OWNED, limit), limit),
        // Well-formed patches, so that many succeed and are read back: with createdAt or facility in
        // most of them, 2 to 7 in 200 runs succeeded, and a run with none checked no success at all.
        patchArb(limit, false).map((json) => ({ json }) as { json: unknown }),
      ),
      ifMatchArb,
      async (method, authorization, id, body, ifMatch) => {
        await replenish()
        const options = method === 'GET' ? { headers: {} } : bodyOptions(body)
        const target = id(ids())
        const before = rowOf(app.db, 'form_templates', target)
        const t0 = Date.now()
        const res = await send(app, {
          method: method as 'GET' | 'PATCH' | 'DELETE',
          url: `/form-templates/${target}`,
          ...options,
          headers: { ...options.headers, ...authorization, ...ifMatch },
        })
        const key = `${method} ${res.statusCode}`
        statuses.set(key, (statuses.get(key) ?? 0) + 1)
        if (res.statusCode !== 200 || method === 'GET') return
        assert.ok(before, 'a 200 for a record that did not exist')
        const who = principalOf(tokens, authorization)
        if (method === 'DELETE') assertDeleted(app.db, 'form_templates', before.id as string)
        else assertTemplatePatched(app.db, before, sentObject((options as { payload?: unknown }).payload), who, t0)
      },
    ),
    undefined,
    // Drawn patches succeed a few times in 200 runs (most carry a field that makes them a 400), and
    // a run where none did checked no success: these two do, in every run.
    [
      ['PATCH', bearer(tokens.write), poolId(0), { json: { type: 'vitals round', hide: false } }, {}],
      ['PATCH', bearer(tokens.write), poolId(1), { json: { tags: ['pain'], description: null } }, {}],
    ],
  )
  t.ok(statuses.get('PATCH 200'), 'some patches succeeded')
  t.ok(statuses.get('PATCH 400'), 'some patches were refused')
  t.comment(`statuses: ${JSON.stringify(Object.fromEntries(statuses))}`)
})
