import t from 'tap'
import { bearer, buildTestApp } from '../helper.js'

/** `field=` and a bare `field` (how qs writes null) mean null, for every field type and inside operators. */
t.test('an empty or bare value means null, like the literal null', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const rows = [
    { bed: 'B-1', encounter: 'e1', occupiedBy: 'p1', provider: 'dr-a', createdAt: 1000 },
    { bed: 'B-2', encounter: 'e2', occupiedBy: 'p2', createdAt: 2000 },
    { bed: 'B-3', encounter: 'e3', occupiedBy: 'p3', room: 'R-1', createdAt: 3000 },
  ]
  const ids: string[] = []
  for (const payload of rows) {
    const res = await app.inject({ method: 'POST', url: '/ward-occupants', headers: bearer(tokens.write), payload })
    ids.push(res.json().id)
  }
  await app.inject({
    method: 'PATCH',
    url: `/ward-occupants/${ids[0]}`,
    headers: bearer(tokens.write),
    payload: { discharge: true },
  })
  const beds = async (query: string) => {
    const res = await app.inject({ url: `/ward-occupants?${query}`, headers: bearer(tokens.read) })
    t.equal(res.statusCode, 200, `${query}: ${res.statusCode === 200 ? '' : res.body}`)
    return (res.json().wardOccupants as { bed: string }[]).map((r) => r.bed)
  }
  // The oracle: the rows above, with B-1 discharged.
  for (const [query, expected] of [
    ['dischargedAt=', ['B-2', 'B-3']],
    ['dischargedAt', ['B-2', 'B-3']],
    ['dischargedAt=null', ['B-2', 'B-3']],
    ['dischargedAt[$ne]=', ['B-1']],
    ['dischargedAt[$in][]=', ['B-2', 'B-3']],
    ['dischargedAt[$nin][]=', ['B-1']],
    ['provider=', ['B-2', 'B-3']],
    ['room', ['B-1', 'B-2']],
    ['provider[$in][]=&provider[$in][]=dr-a', ['B-1', 'B-2', 'B-3']],
    ['$or[0][room]=&$or[0][provider]=', ['B-2']],
  ] as const) {
    t.same(await beds(query), expected, query)
  }
  for (const query of ['dischargedAt[$lt]=', 'dischargedAt[$exists]=', '$limit=', '$sort[bed]=']) {
    const res = await app.inject({ url: `/ward-occupants?${query}`, headers: bearer(tokens.read) })
    t.equal(res.statusCode, 400, `${query} stays a 400`)
  }
})
