import { readFileSync } from 'node:fs'
import { Client } from 'fhir-kit-client'
import { test } from 'tap'
import { buildTestApp } from '../helper.js'
import { assertValidFhir } from './validate.js'

// A FHIR client no one here wrote (fhir-kit-client, over a real socket) imports a public
// Questionnaire, reads it, pages through a search and updates with If-Match.

const sample = (name: string) => JSON.parse(readFileSync(new URL(`samples/${name}`, import.meta.url), 'utf8'))

/** The HTTP status fhir-kit-client's error carries. */
async function statusOf(call: Promise<unknown>): Promise<number | undefined> {
  try {
    await call
    return 200
  } catch (error) {
    return (error as { response?: { status?: number } }).response?.status
  }
}

interface Answer {
  [field: string]: unknown
  resourceType: string
  id: string
  meta: { versionId: string }
  title?: string
  total?: number
  entry?: { resource: { id: string } }[]
  link: { relation: string; url: string }[]
}

test('fhir-kit-client imports the R4 example f201, reads it, pages a search and updates it', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  const client = new Client({ baseUrl: `http://127.0.0.1:${port}/fhir`, bearerToken: tokens.writeA })

  const created = (await client.create({
    resourceType: 'Questionnaire',
    body: sample('f201-lifelines.json'),
  })) as unknown as Answer
  assertValidFhir(t, created, 'the created Questionnaire')
  const read = (await client.read({ resourceType: 'Questionnaire', id: created.id })) as unknown as Answer
  t.same(read, created)

  for (const title of ['Second', 'Third', 'Fourth']) {
    await client.create({
      resourceType: 'Questionnaire',
      body: { resourceType: 'Questionnaire', status: 'active', title },
    })
  }
  let page = (await client.search({ resourceType: 'Questionnaire', searchParams: { _count: 3 } })) as unknown as Answer
  const seen: string[] = []
  for (;;) {
    assertValidFhir(t, page, 'a searchset page')
    t.equal(page.total, 4)
    seen.push(...(page.entry ?? []).map((entry) => entry.resource.id))
    const next = client.nextPage({ bundle: page })
    if (next === undefined) break
    page = (await next) as unknown as Answer
  }
  t.equal(seen.length, 4)
  t.equal(new Set(seen).size, 4, 'no page repeats a Questionnaire')

  const renamed = { ...read, title: 'Lifelines, part 1' }
  const updated = (await client.update({
    resourceType: 'Questionnaire',
    id: read.id,
    body: renamed,
    options: { headers: { 'If-Match': `W/"${read.meta.versionId}"` } },
  })) as unknown as Answer
  t.equal(updated.meta.versionId, '2')
  t.equal(updated.title, 'Lifelines, part 1')
  const stale = client.update({
    resourceType: 'Questionnaire',
    id: read.id,
    body: renamed,
    options: { headers: { 'If-Match': 'W/"1"' } },
  })
  t.equal(await statusOf(stale), 412, 'a stale If-Match is refused')
  const phq9 = client.create({ resourceType: 'Questionnaire', body: sample('sdc-phq9.json') })
  t.equal(await statusOf(phq9), 422, 'the SDC PHQ-9 is refused')
})
