import t from 'tap'
import { createBedRepository } from '../../db/repositories/beds.js'
import { bearer } from '../helper.js'
import { buildMatrixApp, canSee, makeRecord, snapshot, TARGETS } from './isolation-helper.js'

// GET /beds × every caller × every facility it could name: a bed list shows only occupants of the
// facility the caller may read (a bound token naming another facility is a 403, not an empty list
// that would tell it nothing either way), and nothing changes.

interface Bed {
  bed: string
  active: { id: string; facility?: string }[]
  lastDischarged?: { id: string; facility?: string }
}

t.test('the beds of a facility are only ever shown to callers of that facility', async (t) => {
  const { app, callers, root } = await buildMatrixApp(t)
  const owner = new Map<string, (typeof TARGETS)['ward-occupants'][number]>()
  for (const target of TARGETS['ward-occupants']) {
    owner.set(await makeRecord(app, root, 'ward-occupants', target), target)
    const left = await makeRecord(app, root, 'ward-occupants', target)
    const res = await app.inject({
      method: 'PATCH',
      url: `/ward-occupants/${left}`,
      headers: bearer(root.token),
      payload: { discharge: true },
    })
    t.equal(res.statusCode, 200)
    owner.set(left, target)
  }
  // Beds an administrator listed, never occupied: one per facility and one without.
  for (const facility of ['A', 'B', null]) createBedRepository(app.db).add({ facility, bed: `kept-${facility}` })
  for (const caller of callers) {
    for (const named of [undefined, 'A', 'B', 'C']) {
      const cell = `${caller.name} ?facility=${named ?? '(none)'}`
      const before = snapshot(app.db)
      const res = await app.inject({
        url: named === undefined ? '/beds' : `/beds?facility=${named}`,
        headers: bearer(caller.token),
      })
      t.ok(snapshot(app.db) === before, `${cell}: nothing changed`)
      if (caller.facility !== null && named !== undefined && named !== caller.facility) {
        t.equal(res.statusCode, 403, `${cell}: 403`)
        t.equal(res.json().code, 'FACILITY_FORBIDDEN')
        continue
      }
      t.equal(res.statusCode, 200, cell)
      const names = (res.json().beds as { bed: string }[]).map((b) => b.bed).filter((b) => b.startsWith('kept-'))
      const listed = caller.facility ?? named ?? null
      t.same(names, listed === 'C' ? [] : [`kept-${listed}`], `${cell}: the listed bed of that facility only`)
      const shown = (res.json().beds as Bed[]).flatMap((b) => [
        ...b.active,
        ...(b.lastDischarged ? [b.lastDischarged] : []),
      ])
      const expected = [...owner].filter(([, target]) => target.facility === listed)
      t.same(shown.map((o) => o.id).sort(), expected.map(([id]) => id).sort(), `${cell}: the facility's occupants`)
      for (const o of shown) {
        const target = owner.get(o.id)
        t.ok(target && canSee(caller, 'ward-occupants', target), `${cell}: ${o.id} may be seen`)
      }
    }
  }
})

// PUT /beds/:bed/state × every caller × every facility it could name, on a bed of the same name in
// A, in B and without a facility: a caller sets the state of its own facility's bed only.
t.test("a bed's state is only ever set by callers of its facility", async (t) => {
  const { app, callers } = await buildMatrixApp(t)
  for (const facility of ['A', 'B', null]) createBedRepository(app.db).add({ facility, bed: 'same-name' })
  const rows = () =>
    app.db.prepare('SELECT facility, state FROM bed_states ORDER BY facility').all() as {
      facility: string
      state: string
    }[]
  for (const caller of callers) {
    for (const named of [undefined, 'A', 'B', 'C']) {
      const cell = `${caller.name} ?facility=${named ?? '(none)'}`
      app.db.prepare('DELETE FROM bed_states').run()
      const res = await app.inject({
        method: 'PUT',
        url: named === undefined ? '/beds/same-name/state' : `/beds/same-name/state?facility=${named}`,
        headers: bearer(caller.token),
        payload: { state: 'closed' },
      })
      const target = caller.facility ?? named ?? null
      if (caller.role === 'read') {
        t.equal(res.statusCode, 403, `${cell}: a read token sets nothing`)
        t.same(rows(), [], `${cell}: nothing changed`)
        continue
      }
      if (caller.facility !== null && named !== undefined && named !== caller.facility) {
        t.equal(res.statusCode, 403, `${cell}: 403`)
        t.equal(res.json().code, 'FACILITY_FORBIDDEN')
        t.same(rows(), [], `${cell}: nothing changed`)
        continue
      }
      if (target === 'C') {
        t.equal(res.statusCode, 404, `${cell}: no such bed there`)
        t.same(rows(), [])
        continue
      }
      t.equal(res.statusCode, 200, cell)
      t.same(rows(), [{ facility: target ?? '', state: 'closed' }], `${cell}: its own facility's bed only`)
    }
  }
})
