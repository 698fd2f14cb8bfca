import { CapabilityTool, Client } from 'fhir-kit-client'
import fhirpath from 'fhirpath'
import r4 from 'fhirpath/fhir-context/r4'
import t from 'tap'
import { buildTestApp } from '../helper.js'
import { assertValidFhir } from './validate.js'
import { admit } from './ward.js'

/**
 * The endpoint as FHIR clients no one here wrote see it, over a real socket: fhir-kit-client reads
 * the CapabilityStatement, searches, pages by the next links and reads; fhirpath asserts on what it
 * got, with the R4 model.
 */

t.test('fhir-kit-client searches, pages and reads; FHIRPath checks the answers', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  for (let i = 0; i < 12; i++)
    await admit(app, tokens.writeA, {
      bed: `A-${i}`,
      room: `R${i % 3}`,
      encounter: `V${i}`,
      occupiedBy: `p${i}`,
      provider: 'dr-a',
    })
  await admit(app, tokens.writeB, { bed: 'B-1', encounter: 'W1', occupiedBy: 'q1' })
  const address = await app.listen({ port: 0, host: '127.0.0.1' })
  const client = new Client({ baseUrl: `${address}/fhir`, bearerToken: tokens.readA })
  const anonymous = new Client({ baseUrl: `${address}/fhir` })

  const statement = await anonymous.capabilityStatement()
  assertValidFhir(t, statement, 'the CapabilityStatement')
  const capabilities = new CapabilityTool(statement)
  t.ok(capabilities.resourceCan('Encounter', 'search-type'))
  t.ok(capabilities.resourceCan('Location', 'read'))
  t.ok(capabilities.supportFor({ resourceType: 'Encounter', capabilityType: 'searchParam', where: { name: 'status' } }))
  t.notOk(capabilities.resourceCan('Encounter', 'create'), 'no Encounter is written through FHIR')

  const first = (await client.search({
    resourceType: 'Encounter',
    searchParams: { status: 'in-progress', _count: 5, _include: 'Encounter:location' },
  })) as unknown as { total: number; entry: unknown[] }
  assertValidFhir(t, first, 'the first page')
  t.equal(first.total, 12)
  const encounters: string[] = fhirpath.evaluate(
    first,
    "Bundle.entry.where(search.mode = 'match').resource.id",
    undefined,
    r4,
  ) as string[]
  t.equal(encounters.length, 5)
  const pages = [first]
  let page: unknown = first
  for (;;) {
    page = await client.nextPage({ bundle: page as never })
    if (!page) break
    assertValidFhir(t, page, `page ${pages.length + 1}`)
    pages.push(page as typeof first)
    encounters.push(
      ...(fhirpath.evaluate(page, "Bundle.entry.where(search.mode = 'match').resource.id", undefined, r4) as string[]),
    )
  }
  t.equal(pages.length, 3, 'three pages of 5, 5 and 2')
  t.same(
    encounters.sort(),
    Array.from({ length: 12 }, (_, i) => `en-A..V${i}`).sort(),
    'each encounter once, none of B',
  )
  // Every included Location is the bed of a match on the same page.
  for (const bundle of pages) {
    const referenced = fhirpath.evaluate(
      bundle,
      "Bundle.entry.where(search.mode = 'match').resource.location.location.reference",
      undefined,
      r4,
    ) as string[]
    const included = fhirpath.evaluate(
      bundle,
      "Bundle.entry.where(search.mode = 'include').resource.select('Location/' + id)",
      undefined,
      r4,
    ) as string[]
    t.same([...included].sort(), [...new Set(referenced)].sort(), 'the included beds are exactly those referenced')
  }
  t.same(
    fhirpath.evaluate(
      first,
      "Bundle.entry.resource.where(resourceType = 'Encounter').all(status = 'in-progress' and class.code = 'IMP' and period.start.exists() and period.end.empty())",
      undefined,
      r4,
    ),
    [true],
  )

  const bed = await client.read({ resourceType: 'Location', id: 'bd-A..A-3' })
  assertValidFhir(t, bed, 'the bed')
  t.same(fhirpath.evaluate(bed, 'Location.partOf.reference', undefined, r4), ['Location/ro-A..R0'])
  t.same(
    fhirpath.evaluate(
      bed,
      "Location.operationalStatus.where(system = 'http://terminology.hl7.org/CodeSystem/v2-0116').code",
      undefined,
      r4,
    ),
    ['O'],
  )
  const withEncounters = await client.search({
    resourceType: 'Location',
    searchParams: { partof: 'ro-A..R1', _revinclude: 'Encounter:location' },
  })
  assertValidFhir(t, withEncounters, 'the beds of a room with their encounters')
  t.same(
    (
      fhirpath.evaluate(
        withEncounters,
        "Bundle.entry.where(search.mode = 'include').resource.location.where(status = 'active').location.reference",
        undefined,
        r4,
      ) as string[]
    ).sort(),
    ['Location/bd-A..A-1', 'Location/bd-A..A-10', 'Location/bd-A..A-4', 'Location/bd-A..A-7'],
  )
  await t.rejects(client.read({ resourceType: 'Encounter', id: 'en-B..W1' }), "B's encounter is not found for A")
})
