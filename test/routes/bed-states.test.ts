import t from 'tap'
import { firstMessage, listeningApp, openStream } from '../feed/helpers.js'
import { bearer, buildTestApp, type TestApp } from '../helper.js'

async function admit(app: TestApp, token: string, bed: string, encounter: string, query = '') {
  return app.inject({
    method: 'POST',
    url: `/ward-occupants${query}`,
    headers: bearer(token),
    payload: { encounter, bed, room: 'R1', occupiedBy: `patient-${encounter}` },
  })
}
function setState(app: TestApp, token: string, bed: string, body: object, query = '') {
  return app.inject({ method: 'PUT', url: `/beds/${bed}/state${query}`, headers: bearer(token), payload: body })
}
async function bedsOf(app: TestApp, token: string, query = '') {
  const res = await app.inject({ url: `/beds${query}`, headers: bearer(token) })
  return res.json().beds as { bed: string; state: string; housekeeping?: { state: string; note?: string } }[]
}

t.test('a housekeeping state is set, shown on /beds, audited, on the feed, and cleared', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const first = await admit(app, tokens.writeA, 'B1', 'E1')
  t.equal(first.statusCode, 200)
  await app.inject({
    method: 'PATCH',
    url: `/ward-occupants/${first.json().id}`,
    headers: bearer(tokens.writeA),
    payload: { discharge: true },
  })
  const set = await setState(app, tokens.writeA, 'B1', { state: 'cleaning', note: 'terminal clean' })
  t.equal(set.statusCode, 200, set.body)
  t.match(set.json(), {
    facility: 'A',
    bed: 'B1',
    state: 'cleaning',
    housekeeping: { state: 'cleaning', setBy: 'nurse-a', note: 'terminal clean' },
  })
  t.match(await bedsOf(app, tokens.readA), [{ bed: 'B1', state: 'cleaning', housekeeping: { state: 'cleaning' } }])
  const audit = await app.inject({ url: '/audit?resource=bed-states', headers: bearer(tokens.admin) })
  t.match(audit.json().entries, [
    {
      account: 'nurse-a',
      resource: 'bed-states',
      recordId: 'B1',
      facility: 'A',
      before: { state: 'free' },
      after: { state: 'cleaning' },
    },
  ])
  const feed = app.db
    .prepare(`SELECT action, facility, payload FROM feed_events WHERE resource = 'bed-states'`)
    .all() as {
    payload: string
  }[]
  t.equal(feed.length, 1)
  t.match(JSON.parse(feed[0]?.payload ?? '{}'), { bed: 'B1', state: 'cleaning' })
  const notes = await app.inject({ url: '/notifications', headers: bearer(tokens.readA) })
  t.match(
    notes.json().notifications.find((n: { code: string }) => n.code === 'bed-state-set'),
    { facility: 'A', type: 'ward', title: 'Bed B1 is cleaning', body: 'Bed B1 is now cleaning (terminal clean).' },
    'the ward is told, as of an admission',
  )
  // The same state again changes nothing and logs nothing.
  t.equal((await setState(app, tokens.writeA, 'B1', { state: 'cleaning', note: 'terminal clean' })).statusCode, 200)
  t.equal(app.db.prepare(`SELECT count(*) FROM audit_log WHERE resource = 'bed-states'`).pluck().get(), 1)
  const cleared = await setState(app, tokens.writeA, 'B1', { state: null })
  t.match(cleared.json(), { bed: 'B1', state: 'free' })
  t.notOk('housekeeping' in cleared.json())
})

t.test(
  'a closed, cleaned or contaminated bed is refused to an admission over the API; an isolated one is not',
  async (t) => {
    const { app, tokens } = await buildTestApp(t)
    for (const [i, state] of ['closed', 'cleaning', 'contaminated', 'isolated'].entries()) {
      const bed = `C${i}`
      app.repos.beds.add({ facility: 'A', bed })
      t.equal((await setState(app, tokens.writeA, bed, { state })).statusCode, 200)
      const res = await admit(app, tokens.writeA, bed, `E${i}`)
      if (state === 'isolated') {
        t.equal(res.statusCode, 200, 'an isolated bed takes the patient who needs isolation')
        continue
      }
      t.equal(res.statusCode, 409, state)
      t.match(res.json(), {
        code: 'BED_NOT_AVAILABLE',
        message: new RegExp(`bed ${bed} is ${state} \\(since .*, set by nurse-a\\)`),
      })
    }
    t.equal(app.db.prepare('SELECT count(*) FROM ward_occupants').pluck().get(), 1, 'no refused admission left a row')
  },
)

t.test(
  're-opening a discharged stay puts its patient back: refused while the bed is closed, as an admission',
  async (t) => {
    const { app, tokens } = await buildTestApp(t)
    const stay = (await admit(app, tokens.writeA, 'R1', 'E1')).json()
    const discharge = (value: boolean) =>
      app.inject({
        method: 'PATCH',
        url: `/ward-occupants/${stay.id}`,
        headers: bearer(tokens.writeA),
        payload: { discharge: value },
      })
    t.equal((await discharge(true)).statusCode, 200)
    t.equal((await setState(app, tokens.writeA, 'R1', { state: 'contaminated' })).statusCode, 200)
    const reopened = await discharge(false)
    t.equal(reopened.statusCode, 409, reopened.body)
    t.match(reopened.json(), { code: 'BED_NOT_AVAILABLE', message: /bed R1 is contaminated/ })
    t.match(await bedsOf(app, tokens.readA), [{ bed: 'R1', state: 'contaminated' }], 'the bed stays empty')
    t.equal((await setState(app, tokens.writeA, 'R1', { state: 'isolated' })).statusCode, 200)
    t.equal((await discharge(false)).statusCode, 200, 'an isolated bed takes its patient back')
    t.equal((await discharge(false)).statusCode, 200, 'an active stay: nothing to re-open, nothing refused')
  },
)

t.test('a bed state answered without a change is a read of that bed: the read log names it', async (t) => {
  const { app, tokens } = await buildTestApp(t, { AUDIT_READS: true })
  app.repos.beds.add({ facility: 'A', bed: 'B1' })
  for (let i = 0; i < 2; i++) t.equal((await setState(app, tokens.writeA, 'B1', { state: 'closed' })).statusCode, 200)
  await app.writes.run(() => undefined)
  const reads = await app.inject({ url: '/audit?kind=reads&recordId=B1', headers: bearer(tokens.admin) })
  t.match(reads.json().entries, [{ route: 'PUT /beds/:bed/state', operation: 'get', recordId: 'B1', facility: 'A' }])
})

t.test('bad input and unknown beds', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const bad = await setState(app, tokens.writeA, 'B1', { state: 'dirty' })
  t.equal(bad.statusCode, 400)
  t.equal((await setState(app, tokens.writeA, 'B1', { state: 'closed', extra: 1 })).statusCode, 400)
  const unknown = await setState(app, tokens.writeA, 'NOPE', { state: 'closed' })
  t.equal(unknown.statusCode, 404)
  t.match(unknown.json(), { code: 'BED_NOT_FOUND', message: /bed NOPE is not a bed of A/ })
  t.equal((await setState(app, tokens.readA, 'B1', { state: 'closed' })).statusCode, 403, 'read role may not')
})

t.test('facility isolation: a token bound to ward A cannot set or see the state of ward B beds', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  t.equal((await admit(app, tokens.writeB, 'B1', 'EB')).statusCode, 200)
  app.repos.beds.add({ facility: 'A', bed: 'B1' })
  const refused = await setState(app, tokens.adminA, 'B1', { state: 'closed' }, '?facility=B')
  t.equal(refused.statusCode, 403)
  t.match(refused.json(), { code: 'FACILITY_FORBIDDEN' })
  // Without ?facility the bound token acts on its own ward's B1, never B's.
  t.equal((await setState(app, tokens.adminA, 'B1', { state: 'closed' })).statusCode, 200)
  t.match(await bedsOf(app, tokens.writeB), [{ bed: 'B1', state: 'occupied' }])
  t.notOk((await bedsOf(app, tokens.writeB))[0]?.housekeeping, 'B1 of B has no state')
  t.match(await bedsOf(app, tokens.readA), [{ bed: 'B1', state: 'closed' }])
  const rows = app.db.prepare('SELECT facility, bed, state FROM bed_states').all()
  t.same(rows, [{ facility: 'A', bed: 'B1', state: 'closed' }])
  // The feed event of A's change is A's: a stream of B never carries it.
  t.same(app.db.prepare(`SELECT facility FROM feed_events WHERE resource = 'bed-states'`).pluck().all(), ['A'])
  // An admin without a facility may act on either ward by naming it.
  t.equal((await setState(app, tokens.admin, 'B1', { state: 'isolated' }, '?facility=B')).statusCode, 200)
  t.match(await bedsOf(app, tokens.writeB), [{ bed: 'B1', state: 'occupied', housekeeping: { state: 'isolated' } }])
})

t.test('on the live feed, a bed-states event reaches its own facility and the unbound, never another', async (t) => {
  const { app, tokens, base } = await listeningApp(t)
  app.repos.beds.add({ facility: 'A', bed: 'B1' })
  app.repos.beds.add({ facility: 'B', bed: 'B1' })
  const url = `${base}/events?resources=bed-states`
  const [ofA, ofB, all] = await Promise.all([
    openStream(url, bearer(tokens.readA)),
    openStream(url, bearer(tokens.writeB)),
    openStream(url, bearer(tokens.admin)),
  ])
  t.teardown(() => {
    for (const s of [ofA, ofB, all]) s.close()
  })
  for (const s of [ofA, ofB, all]) await firstMessage(s)
  t.equal((await setState(app, tokens.writeA, 'B1', { state: 'closed', note: 'A only' })).statusCode, 200)
  t.equal((await setState(app, tokens.writeB, 'B1', { state: 'isolated' })).statusCode, 200)
  // A last change of each side: in order, so whatever of the other side came before has arrived.
  t.equal((await setState(app, tokens.writeA, 'B1', { state: 'cleaning' })).statusCode, 200)
  t.equal((await setState(app, tokens.writeB, 'B1', { state: 'cleaning' })).statusCode, 200)
  await all.until((s) => s.events.length === 5, 10_000, 'every change')
  const last = (facility: string) => (s: typeof ofA) =>
    s.events.some((e) => e.data.includes('"cleaning"') && JSON.parse(e.data).facility === facility)
  await ofA.until(last('A'), 10_000, "A's last change")
  await ofB.until(last('B'), 10_000, "B's last change")
  const seen = (s: typeof ofA) =>
    s.events.slice(1).map((e) => [e.event, JSON.parse(e.data).facility, JSON.parse(e.data).state])
  t.same(
    seen(ofA),
    [
      ['bed-states patched', 'A', 'closed'],
      ['bed-states patched', 'A', 'cleaning'],
    ],
    'A sees its own bed only',
  )
  t.same(
    seen(ofB),
    [
      ['bed-states patched', 'B', 'isolated'],
      ['bed-states patched', 'B', 'cleaning'],
    ],
    'B sees its own bed only',
  )
  t.equal(seen(all).length, 4, 'an admin without a facility sees both')
})
