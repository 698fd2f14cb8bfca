import t, { type Test } from 'tap'
import { createBedRepository } from '../../db/repositories/beds.js'
import { bearer, buildTestApp, type TestApp } from '../helper.js'
import { planOf, type RanStatement, recordStatements } from './captured-statements.js'

// GET /beds (db/beds.ts) never reads a facility's whole history: every statement it runs is an
// index search (no SCAN of ward_occupants, not even of an index), with the planner hints of a
// fresh database and after ANALYZE on real data.

/** Four facilities (one of them none), 40 beds each, a long history per bed. */
function fill(app: TestApp) {
  const insert = app.db.prepare(
    `INSERT INTO ward_occupants (id, created_at, created_by, facility, encounter, room, bed, occupied_at,
       occupied_by, discharged_at, discharged_by) VALUES (?, ?, 'nurse', ?, ?, ?, ?, ?, 'patient', ?, ?)`,
  )
  const facilities = ['A', 'B', 'C', null]
  const slots = 40 * facilities.length
  const count = 6000
  app.db.transaction(() => {
    for (let i = 0; i < count; i++) {
      const slot = i % slots
      const at = 1_000 + i * 60_000
      const active = i >= count - slots / 2
      insert.run(
        i.toString(16).padStart(24, '0'),
        at,
        facilities[slot % facilities.length] ?? null,
        `enc-${i}`,
        `R-${slot % 10}`,
        `B-${Math.floor(slot / facilities.length)}`,
        at,
        active ? null : at + 30_000,
        active ? null : 'nurse',
      )
    }
  })()
}

function plansOf(t: Test, app: TestApp, sink: RanStatement[]) {
  // Made after recordStatements, so its statements report: the repository GET /beds calls.
  const beds = createBedRepository(app.db)
  for (const facility of ['A', 'B', null]) {
    sink.length = 0
    t.equal(beds.list(facility).length, 40, `${facility}: 40 beds`)
    const details = new Set<string>()
    for (const ran of sink.splice(0)) for (const detail of planOf(app.db, ran)) details.add(detail)
    const indexes = new Set<string>()
    for (const detail of details) {
      t.notMatch(detail, /^SCAN (ward_occupants|kept_beds|seen_beds)\b/, `${facility}: ${detail}`)
      const index = /USING (?:COVERING )?INDEX (\w+)/.exec(detail)?.[1]
      if (index) indexes.add(index)
    }
    const searched = (pattern: RegExp) => [...details].some((d) => pattern.test(d))
    t.ok(searched(/^SEARCH seen_beds USING PRIMARY KEY \(facility=\?\)/), `${facility}: the beds by their key`)
    t.ok(
      searched(/^SEARCH ward_occupants USING INDEX ward_occupants_bed \(bed=\? AND facility=\?/),
      `${facility}: a bed's last discharge from the bed's own rows (${[...details]})`,
    )
    t.ok(indexes.has('ward_occupants_active'), `${facility}: the occupants from the active index`)
    t.ok(searched(/^SEARCH kept_beds USING PRIMARY KEY \(facility=\?\)/), `${facility}: the listed beds by their key`)
  }
}

t.test('GET /beds: index searches only, fresh and after ANALYZE', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  fill(app)
  const { ran, stop } = recordStatements(app.db)
  t.teardown(stop)
  t.test('planner hints of a fresh database', async (t) => plansOf(t, app, ran))
  t.test('after ANALYZE', async (t) => {
    app.db.exec('ANALYZE')
    plansOf(t, app, ran)
  })
  const res = await app.inject({ url: '/beds', headers: bearer(tokens.readA) })
  t.equal(res.json().total, 40, 'the route answers what the repository lists')
})
