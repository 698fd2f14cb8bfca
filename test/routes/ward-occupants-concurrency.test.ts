import type { AddressInfo } from 'node:net'
import t from 'tap'
import { buildTestApp } from '../helper.js'

const RACERS = 20

t.test('the one-bed rule holds under simultaneous requests to a listening server', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const call = (method: string, path: string, body: object) =>
    fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${tokens.writeA}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })

  const creates = await Promise.all(
    Array.from({ length: RACERS }, (_, i) =>
      call('POST', '/ward-occupants', { encounter: `e${i}`, bed: 'B-1', occupiedBy: `p${i}` }),
    ),
  )
  const statuses = creates.map((r) => r.status).sort()
  t.same(statuses, [200, ...Array(RACERS - 1).fill(409)], 'exactly one admission wins')
  const active = app.db
    .prepare("SELECT count(*) AS n FROM ward_occupants WHERE bed = 'B-1' AND discharged_at IS NULL")
    .get()
  t.same(active, { n: 1 }, 'the database holds one active record')

  // Discharged records of one bed, then all re-opened at once: only one may win the bed.
  const winner = creates.find((r) => r.status === 200) as Response
  const ids = [((await winner.json()) as { id: string }).id]
  await call('PATCH', `/ward-occupants/${ids[0]}`, { discharge: true })
  for (let i = 1; i < RACERS; i++) {
    const res = await call('POST', '/ward-occupants', { encounter: `r${i}`, bed: 'B-1', occupiedBy: `q${i}` })
    const { id } = (await res.json()) as { id: string }
    ids.push(id)
    await call('PATCH', `/ward-occupants/${id}`, { discharge: true })
  }
  const reopens = await Promise.all(ids.map((id) => call('PATCH', `/ward-occupants/${id}`, { discharge: false })))
  const bodies = (await Promise.all(reopens.map((r) => r.json()))) as { code?: string }[]
  t.same(reopens.map((r) => r.status).sort(), [200, ...Array(RACERS - 1).fill(409)], 'exactly one re-open wins')
  t.equal(bodies.filter((b) => b.code === 'BED_OCCUPIED').length, RACERS - 1)
  t.same(app.db.prepare("SELECT count(*) AS n FROM ward_occupants WHERE bed = 'B-1' AND discharged_at IS NULL").get(), {
    n: 1,
  })
})
