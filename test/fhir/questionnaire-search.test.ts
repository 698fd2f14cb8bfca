import { type Test, test } from 'tap'
import { bearer, buildTestApp, type TestApp } from '../helper.js'
import { assertValidFhir } from './validate.js'

const FHIR = { 'content-type': 'application/fhir+json' }

interface Bundle {
  resourceType: 'Bundle'
  total: number
  link: { relation: string; url: string }[]
  entry?: { fullUrl: string; resource: { id: string; title?: string; date: string }; search: { mode: string } }[]
}

async function search(t: Test, app: TestApp, token: string, query: string): Promise<Bundle> {
  const answer = await app.inject({ url: `/fhir/Questionnaire${query}`, headers: bearer(token) })
  t.equal(answer.statusCode, 200, `${query}: ${answer.body.slice(0, 300)}`)
  const bundle = answer.json() as Bundle
  assertValidFhir(t, bundle, `the searchset of ${query}`)
  return bundle
}

/** Every page of a search, by its next links (the path and query of each, on the same app). */
async function allPages(t: Test, app: TestApp, token: string, query: string): Promise<string[]> {
  const ids: string[] = []
  let bundle = await search(t, app, token, query)
  for (;;) {
    ids.push(...(bundle.entry ?? []).map((entry) => entry.resource.id))
    const next = bundle.link.find((link) => link.relation === 'next')
    if (next === undefined) return ids
    const url = new URL(next.url)
    bundle = await search(t, app, token, url.search)
  }
}

async function template(app: TestApp, token: string, name: string, createdAt: number, facility?: string) {
  const payload = {
    type: 'intake',
    name,
    createdAt,
    ...(facility ? { facility } : {}),
    items: [{ id: 'q', type: 'date' }],
    template: 'h1= name',
  }
  const made = await app.inject({ method: 'POST', url: '/form-templates', headers: bearer(token), payload })
  return made.json().id as string
}

/** A PUT by `writer` of the Questionnaire as `reader` reads it, with another title. */
async function retitle(app: TestApp, by: { reader: string; writer: string }, id: string, title: string) {
  const current = (await app.inject({ url: `/fhir/Questionnaire/${id}`, headers: bearer(by.reader) })).json()
  return app.inject({
    method: 'PUT',
    url: `/fhir/Questionnaire/${id}`,
    headers: { ...bearer(by.writer), ...FHIR },
    payload: { ...current, title },
  })
}

test('search by title, name, status, url, version, _id; _summary=count; paging by next links; _sort', async (t) => {
  const { app, tokens } = await buildTestApp(t, { FHIR_CANONICAL_BASE: 'https://ward.example/fhir' })
  const ids = [
    await template(app, tokens.write, 'Admission intake', 3000),
    await template(app, tokens.write, 'Discharge letter', 1000),
    await template(app, tokens.write, 'Fièvre à l’admission', 2000),
    await template(app, tokens.write, 'Pain', 4000),
    await template(app, tokens.write, 'Pain again', 5000),
  ]
  await app.inject({
    method: 'PATCH',
    url: `/form-templates/${ids[4]}`,
    headers: bearer(tokens.write),
    payload: { hide: true },
  })
  const titles = async (query: string) =>
    ((await search(t, app, tokens.read, query)).entry ?? []).map((entry) => entry.resource.title)

  t.same(await titles('?title=admission'), ['Admission intake'])
  t.same((await titles('?title:contains=admission')).sort(), ['Admission intake', 'Fièvre à l’admission'])
  t.same(await titles('?title=fievre'), ['Fièvre à l’admission'], 'accents and case are ignored')
  t.same(await titles('?title:exact=Pain'), ['Pain'])
  t.same(await titles('?name=DischargeLetter'), ['Discharge letter'])
  t.same(await titles('?status=retired'), ['Pain again'])
  t.equal((await search(t, app, tokens.read, '?status=active')).total, 4)
  t.same(await titles(`?url=https://ward.example/fhir/Questionnaire/${ids[1]}`), ['Discharge letter'])
  t.same(await titles(`?_id=${ids[0]},${ids[3]}&_sort=date`), ['Admission intake', 'Pain'])
  t.same(await titles(`?_id=${ids[4]}&version=2`), ['Pain again'])
  t.same(await titles(`?_id=${ids[4]}&version=1`), [])
  t.same(await titles('?_sort=date'), [
    'Discharge letter',
    'Fièvre à l’admission',
    'Admission intake',
    'Pain',
    'Pain again',
  ])
  t.same(await titles('?_sort=-date&_count=2'), ['Pain again', 'Pain'])
  t.same(await titles('?unknown=1&title=Pain&title:exact=Pain'), ['Pain'], 'unknown parameters are ignored')

  const counted = await search(t, app, tokens.read, '?_summary=count&title=pain')
  t.equal(counted.total, 2)
  t.equal(counted.entry, undefined)

  const paged = await allPages(t, app, tokens.read, '?_count=2')
  t.same(paged, [...ids].sort(), 'every template once, in id order')
  const descending = await allPages(t, app, tokens.read, '?_count=2&_sort=-date')
  t.same(descending, [ids[4], ids[3], ids[0], ids[2], ids[1]])
  const first = await search(t, app, tokens.read, '?_count=2')
  t.match(first.entry?.[0], { fullUrl: /\/fhir\/Questionnaire\/[0-9a-f]{24}$/, search: { mode: 'match' } })

  const strict = await app.inject({
    url: '/fhir/Questionnaire?unknown=1',
    headers: { ...bearer(tokens.read), prefer: 'handling=strict' },
  })
  t.equal(strict.statusCode, 400)
  const badSort = await app.inject({ url: '/fhir/Questionnaire?_sort=title', headers: bearer(tokens.read) })
  t.equal(badSort.statusCode, 400)
  t.equal(badSort.json().resourceType, 'OperationOutcome')
})

test("a token of ward A never reads, searches, counts, pages or updates ward B's Questionnaires", async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const a = [await template(app, tokens.writeA, 'Ward A one', 1), await template(app, tokens.writeA, 'Ward A two', 2)]
  const b = await template(app, tokens.writeB, 'Ward B', 3)
  const unbound = await template(app, tokens.write, 'No ward', 4)

  const read = await app.inject({ url: `/fhir/Questionnaire/${b}`, headers: bearer(tokens.readA) })
  t.equal(read.statusCode, 404)
  t.same(
    (await search(t, app, tokens.readA, '')).entry?.map((entry) => entry.resource.id),
    a,
    'a search finds only its own ward',
  )
  t.equal((await search(t, app, tokens.readA, `?_id=${b}`)).total, 0)
  t.equal((await search(t, app, tokens.readA, '?title=ward')).total, 2)
  t.equal((await search(t, app, tokens.readA, '?_summary=count')).total, 2)
  t.same(await allPages(t, app, tokens.readA, '?_count=1'), a, 'its pages hold only its own ward')
  t.same(
    await allPages(t, app, tokens.read, '?_count=1'),
    [...a, b, unbound].sort(),
    'an unbound token sees every ward',
  )

  const update = await retitle(app, { reader: tokens.writeB, writer: tokens.writeA }, b, 'taken over')
  t.equal(update.statusCode, 404)
  const still = await app.inject({ url: `/form-templates/${b}`, headers: bearer(tokens.writeB) })
  t.equal(still.json().name, 'Ward B')

  const created = await app.inject({
    method: 'POST',
    url: '/fhir/Questionnaire',
    headers: { ...bearer(tokens.writeA), ...FHIR },
    payload: { resourceType: 'Questionnaire', status: 'active', title: 'New in A' },
  })
  const rest = await app.inject({ url: `/form-templates/${created.json().id}`, headers: bearer(tokens.readA) })
  t.equal(rest.json().facility, 'A', "a ward's new Questionnaire is its ward's")
  t.equal(
    (await app.inject({ url: `/fhir/Questionnaire/${created.json().id}`, headers: bearer(tokens.writeB) })).statusCode,
    404,
  )
})

/**
 * A search reads the templates without their print layouts (db/repositories/questionnaires.ts):
 * after every kind of change it still answers each template as it is now, as its read does (the
 * read loads the whole template). Each template has a layout, which the Questionnaire leaves out.
 */
test('a search answers each template as its read does, after any change', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const [one, two, three] = [
    await template(app, tokens.write, 'One', 1000, 'A'),
    await template(app, tokens.write, 'Two', 2000, 'A'),
    await template(app, tokens.write, 'Three', 3000, 'B'),
  ]
  /** The search's resources of `token` against each one's read, by id. */
  const agree = async (token: string, what: string) => {
    const found = (await search(t, app, token, '?_count=50')).entry ?? []
    for (const { resource } of found) {
      const read = await app.inject({ url: `/fhir/Questionnaire/${resource.id}`, headers: bearer(tokens.admin) })
      t.same(resource, read.json(), `${what}: ${resource.id} as its read says`)
    }
    return found.map(({ resource }) => resource.id)
  }
  const change = async (id: string | undefined, payload: object) => {
    const res = await app.inject({
      method: 'PATCH',
      url: `/form-templates/${id}`,
      headers: bearer(tokens.admin),
      payload,
    })
    t.equal(res.statusCode, 200, res.body.slice(0, 200))
  }
  // Every field a Questionnaire carries: a column the search left out would show.
  await change(one, {
    subtype: 'adult',
    description: 'On arrival',
    meta: { fhir: { publisher: 'Ward A', purpose: 'intake' } },
    items: [{ id: 'q', type: 'multiplechoice', question: 'Mobility?', choices: ['alone', 'helped'], required: true }],
  })
  t.same(await agree(tokens.read, 'first'), [one, two, three].sort())

  await change(one, { name: 'One renamed', items: [{ id: 'n', type: 'trueorfalse', question: 'New?' }] })
  await change(two, { hide: true })
  t.same(await agree(tokens.read, 'renamed and retired'), [one, two, three].sort())
  t.equal(
    (await search(t, app, tokens.read, '?title=one%20ren')).entry?.[0]?.resource.id,
    one,
    'found by its new title',
  )
  t.equal((await search(t, app, tokens.read, '?title=one')).total, 1)

  const put = await retitle(app, { reader: tokens.admin, writer: tokens.admin }, three as string, 'Three replaced')
  t.equal(put.statusCode, 200)
  const kept = await app.inject({ url: `/form-templates/${three}`, headers: bearer(tokens.admin) })
  t.equal(kept.json().template, 'h1= name', 'the PUT kept the print layout the Questionnaire does not carry')
  await change(one, { facility: 'B' })
  t.same(await agree(tokens.readA, 'ward A after the move'), [two], 'the moved template left ward A')
  t.same(await agree(tokens.writeB, 'ward B after the move'), [one, three].sort())
  const removed = await app.inject({ method: 'DELETE', url: `/form-templates/${two}`, headers: bearer(tokens.admin) })
  t.equal(removed.statusCode, 200)
  t.same(await agree(tokens.read, 'after a removal'), [one, three].sort())
})
