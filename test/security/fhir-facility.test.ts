import t from 'tap'
import { fhirId } from '../../fhir/ids.js'
import { admit, allPages, fhirGet, ids } from '../fhir/ward.js'
import { buildTestApp } from '../helper.js'

/**
 * A token bound to facility A never sees facility B's Locations or Encounters through the FHIR
 * endpoint: not in a search, an include, a revinclude, a count, a read, nor a page link, even when
 * B's beds, rooms, encounter numbers and patients have the same names as A's.
 */

const LONG_BED = 'x'.repeat(70) // its id is hashed: found by comparing ids, not by its names

// Once with the answers remembered (the default) and once computed for every request.
for (const cacheBytes of [8_388_608, 0])
  t.test(`facility isolation of the FHIR view (FHIR_CACHE_BYTES=${cacheBytes})`, async (t) => {
    const { app, tokens } = await buildTestApp(t, { FHIR_CACHE_BYTES: cacheBytes })
    for (const [token, facility] of [
      [tokens.writeA, 'A'],
      [tokens.writeB, 'B'],
    ] as const) {
      await admit(app, token, { bed: 'X-1', room: 'R1', encounter: 'V1', occupiedBy: 'same-patient', provider: 'dr' })
      await admit(app, token, {
        bed: `${facility}-only`,
        room: 'R1',
        encounter: `${facility}-V`,
        occupiedBy: `${facility}-patient`,
      })
    }
    await admit(app, tokens.writeB, { bed: LONG_BED, encounter: 'B-long', occupiedBy: 'B-patient' })
    const hashedBed = fhirId('bed', ['B', LONG_BED])
    t.match(hashedBed, /^bd\./)

    const seesB = (text: string) =>
      /(wa|ro|bd|en)-B\.\.|B-patient|B-only|B-V|urn:facility-service:ward","value":"B"/.test(text) ||
      text.includes(hashedBed)
    const searches = [
      '/fhir/Location',
      '/fhir/Location?_revinclude=Encounter:location',
      '/fhir/Location?identifier=urn:facility-service:bed|B/X-1',
      '/fhir/Location?partof=wa-B',
      '/fhir/Location?_id=wa-B,bd-B..X-1',
      `/fhir/Location?_id=${hashedBed}`,
      '/fhir/Location?name=B-only',
      '/fhir/Encounter',
      '/fhir/Encounter?identifier=V1',
      '/fhir/Encounter?identifier=B-V',
      '/fhir/Encounter?subject:identifier=B-patient',
      '/fhir/Encounter?patient:identifier=same-patient&_include=Encounter:location',
      '/fhir/Encounter?location=bd-B..X-1',
      `/fhir/Encounter?location=${hashedBed}`,
      '/fhir/Encounter?_id=en-B..V1',
      '/fhir/Encounter?_include=Encounter:location&_sort=-date',
    ]
    for (const url of searches) {
      const pages = await allPages(app, tokens.readA, `${url}${url.includes('?') ? '&' : '?'}_count=1`)
      // The links repeat the search as asked (B's names in it are the client's own); what they add is the cursor.
      const cursors = pages.flatMap((p) => p.link.map((l) => new URL(l.url).searchParams.get('_cursor') ?? ''))
      const decoded = cursors.map((c) => Buffer.from(c.split('.')[0] ?? '', 'base64url').toString('utf8'))
      t.notOk(seesB(JSON.stringify(pages.map((p) => p.entry ?? []))), `${url}: nothing of B in any page`)
      t.notOk(seesB(decoded.join(' ')), `${url}: nor in a page link's cursor`)
      const count = await fhirGet(app, tokens.readA, `${url}${url.includes('?') ? '&' : '?'}_summary=count`)
      const unbound = await fhirGet(app, tokens.read, `${url}${url.includes('?') ? '&' : '?'}_summary=count`)
      const ofA = pages.flatMap((p) => ids(p)).length
      t.equal(count.body.total, ofA, `${url}: the count is A's (${ofA})`)
      t.ok(unbound.body.total >= ofA, 'a token without a facility sees at least as much')
    }
    // Answers are remembered while the ward does not change: never across facilities.
    for (const url of ['/fhir/Encounter?_count=7', '/fhir/Location?_count=7&_revinclude=Encounter:location']) {
      const unboundFirst = await fhirGet(app, tokens.read, url)
      t.ok(seesB(JSON.stringify(unboundFirst.body.entry)), `${url}: the unbound token sees B`)
      const thenA = await fhirGet(app, tokens.readA, url)
      t.notOk(seesB(JSON.stringify(thenA.body.entry ?? [])), `${url}: A's token, asking the same just after, does not`)
    }
    const everything = await fhirGet(app, tokens.read, '/fhir/Encounter?_count=500')
    t.ok(seesB(JSON.stringify(everything.body)), "the unbound token does see B's: the test's pattern finds them")
    for (const url of [
      '/fhir/Location/wa-B',
      '/fhir/Location/ro-B..R1',
      '/fhir/Location/bd-B..X-1',
      `/fhir/Location/${hashedBed}`,
      '/fhir/Encounter/en-B..V1',
      '/fhir/Encounter/en-B..B-V',
    ]) {
      const res = await fhirGet(app, tokens.readA, url)
      t.equal(res.status, 404, `${url}: not found for A`)
      t.equal((await fhirGet(app, tokens.read, url)).status, 200, `${url}: found without a facility`)
    }
    // A next link made for the unbound token, followed by A's token: still only A's.
    const first = (await fhirGet(app, tokens.read, '/fhir/Encounter?_count=1')).body
    const next = new URL(first.link.find((l: { relation: string }) => l.relation === 'next').url)
    const followed = await allPages(app, tokens.readA, next.pathname + next.search)
    t.notOk(
      seesB(JSON.stringify(followed.map((p) => p.entry ?? []))),
      "another token's next link shows A's token nothing of B",
    )
  })
