import t from 'tap'
import { bearer, buildTestApp, type TestApp } from '../helper.js'
import { client } from './notifications-fixtures.js'

const admit = { encounter: 'enc-7', bed: 'B-12', room: 'R-2', occupiedBy: 'patient-7' }

function occupants(app: TestApp, token: string) {
  return {
    post: (payload: object) => app.inject({ method: 'POST', url: '/ward-occupants', headers: bearer(token), payload }),
    patch: (id: string, payload: object) =>
      app.inject({ method: 'PATCH', url: `/ward-occupants/${id}`, headers: bearer(token), payload }),
  }
}

t.test('occupying a bed and discharging notify everyone of the facility', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const viewer = client(app, tokens.readA)
  t.same((await viewer.unseen()).json(), { count: 0 })

  const occupant = (await occupants(app, tokens.writeA).post(admit)).json()
  const [occupied] = (await viewer.list()).json().notifications
  t.match(occupied, {
    code: 'bed-occupied',
    type: 'ward',
    title: 'Bed B-12 occupied',
    body: 'Encounter enc-7 now occupies bed B-12 (room R-2).',
    facility: 'A',
    seenBy: [],
    createdAt: occupant.createdAt,
  })
  t.same(occupied.meta, { wardOccupantId: occupant.id, bed: 'B-12', room: 'R-2', encounter: 'enc-7' })
  t.same((await viewer.unseen()).json(), { count: 1 }, 'a polling client sees it appear')

  t.equal((await occupants(app, tokens.writeA).patch(occupant.id, { discharge: true })).statusCode, 200)
  const discharged = (await viewer.list('code=patient-discharged')).json().notifications
  t.equal(discharged.length, 1)
  t.match(discharged[0], { type: 'ward', title: 'Patient discharged from bed B-12', facility: 'A' })
  t.equal(discharged[0].meta.wardOccupantId, occupant.id)

  t.equal((await occupants(app, tokens.writeA).patch(occupant.id, { discharge: false })).statusCode, 200)
  t.equal((await viewer.list('code=discharge-reverted')).json().total, 1)
  t.same((await viewer.unseen()).json(), { count: 3 })
  await viewer.seen(occupied.id)
  t.same((await viewer.unseen()).json(), { count: 2 }, 'and marks them seen')

  t.equal((await client(app, tokens.writeB).list()).json().total, 0, 'another facility hears nothing')
  t.equal((await client(app, tokens.write).list()).json().total, 3, 'an unbound token hears every facility')
})

t.test('changes that produce no event produce no notification', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const { id } = (await occupants(app, tokens.write).post({ ...admit, facility: 'C', room: undefined })).json()
  t.equal((await occupants(app, tokens.write).post({ ...admit, facility: 'C' })).statusCode, 409, 'bed occupied')
  t.equal((await occupants(app, tokens.write).patch(id, { provider: 'dr-1' })).statusCode, 200)
  t.equal((await occupants(app, tokens.write).patch(id, { discharge: false })).statusCode, 200, 'already active')
  const list = (await client(app, tokens.write).list()).json()
  t.equal(list.total, 1)
  t.match(list.notifications[0], { facility: 'C', body: 'Encounter enc-7 now occupies bed B-12.' })
  t.notOk('room' in list.notifications[0].meta, 'no room, no room in meta')
})

t.test('a change and its notification commit or fail together', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  app.db.exec("CREATE TRIGGER refuse BEFORE INSERT ON notifications BEGIN SELECT RAISE(ABORT, 'refused'); END")
  const res = await occupants(app, tokens.writeA).post(admit)
  t.equal(res.statusCode, 500)
  t.notMatch(res.body, /refused/, 'no SQL detail leaks')
  const { n } = app.db.prepare('SELECT count(*) AS n FROM ward_occupants').get() as { n: number }
  t.equal(n, 0, 'the ward occupant was rolled back with its notification')
})
