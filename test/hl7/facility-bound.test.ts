import { test } from 'tap'
import { bearer, buildTestApp, type TestApp } from '../helper.js'
import { ackOf, openSender } from './client.js'
import { type AdtFields, adt } from './messages.js'
import { occupants } from './ward.js'

// Two facilities, an admin bound to each. A message is filed under the facility it names (else
// its encounter's): it must change nothing in another, neither at receipt nor at a retry.

async function twoWards(t: Parameters<typeof buildTestApp>[0]) {
  const built = await buildTestApp(t, { HL7_PORT: 0 })
  const { app } = built
  const adminB = app.tokens.create({ account: 'admin-b', role: 'admin', facility: 'B' }).token
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  const send = async (fields: AdtFields) => ackOf(await sender.send(adt(fields)))
  return { ...built, adminB, send }
}

async function listed(app: TestApp, token: string) {
  const res = await app.inject({ url: '/hl7/messages?status=parked', headers: bearer(token) })
  return res.json().hl7Messages as {
    id: string
    controlId: string
    facility?: string
    parkCode: string
    error: string
  }[]
}

const active = async (app: TestApp, token: string) =>
  (await occupants(app, token)).filter((o) => o.dischargedAt === undefined).map((o) => `${o.facility}/${o.encounter}`)

test('at receipt: a message naming ward A never changes a stay in ward B; it is parked under A', async (t) => {
  const { app, tokens, adminB, send } = await twoWards(t)
  t.equal(
    (await send({ event: 'A01', control: 'M1', encounter: 'E1', bed: 'B1', facility: 'B', at: '202601051000' })).code,
    'AA',
  )
  const cases: [AdtFields, string][] = [
    [
      { event: 'A03', control: 'D1', encounter: 'E1', bed: 'B1', facility: 'A', at: '202601051100' },
      'a discharge from a bed of A',
    ],
    [
      { event: 'A03', control: 'D2', encounter: 'E1', facility: 'A', at: '202601051100' },
      'a discharge naming A, no bed',
    ],
    [{ event: 'A08', control: 'D3', encounter: 'E1', provider: 'DR9', facility: 'A', at: '202601051100' }, 'an update'],
    [
      { event: 'A02', control: 'D4', encounter: 'E1', bed: 'B7', facility: 'A', at: '202601051100' },
      'a transfer into A',
    ],
    [{ event: 'A11', control: 'D5', encounter: 'E1', facility: 'A', at: '202601051100' }, 'a cancelled admission'],
  ]
  for (const [fields, what] of cases) {
    const ack = await send(fields)
    t.equal(ack.code, 'AA', `${what}: understood`)
    t.match(ack.text, /^parked: the A\d\d would change encounter E1 outside facility A/, what)
  }
  // Parked for another reason, the reason would name B's bed: it does not.
  t.match(await send({ event: 'A01', control: 'D6', encounter: 'E1', bed: 'B9', facility: 'A', at: '202601051100' }), {
    code: 'AA',
    text: /^parked: encounter E1 \(already-admitted\): it has a stay outside facility A, not named here$/,
  })
  t.same(await active(app, tokens.admin), ['B/E1'], "B's patient is where it was")
  t.same(
    (await occupants(app, adminB)).map((o) => [o.encounter, o.provider, o.dischargedAt]),
    [['E1', undefined, undefined]],
    "and unchanged, as B's admin reads it",
  )
  const seenByA = await listed(app, tokens.adminA)
  t.same(
    seenByA.map((m) => [m.controlId, m.facility, m.parkCode]),
    [['D6', 'A', 'already-admitted'], ...cases.map(([f]) => [f.control, 'A', 'other-facility']).reverse()],
    "listed to A's admin, filed under A",
  )
  t.notOk(
    seenByA.some((m) => /\bB\b/.test(m.error)),
    "the reason does not name B to A's admin",
  )
  for (const { id, controlId } of seenByA) {
    const res = await app.inject({ method: 'POST', url: `/hl7/messages/${id}/retry`, headers: bearer(tokens.adminA) })
    t.equal(res.statusCode, 409)
    // D6 would change nothing (already admitted): still parked, its reason again without B.
    const code = controlId === 'D6' ? 'HL7_STILL_PARKED' : 'HL7_FACILITY_CHANGED'
    t.equal(res.json().code, code, `${controlId}: a retry by A's admin cannot land it in B either`)
    t.notMatch(res.json().message, /\bB\d?\b/, 'nor names B')
  }
  t.same(await active(app, tokens.admin), ['B/E1'])
})

test("at a retry: a discharge parked under A, its encounter admitted in B since, is 409 for A's admin", async (t) => {
  const { app, tokens, adminB, send } = await twoWards(t)
  // The discharge names a bed of A and an encounter nobody knows yet: parked under A.
  t.match(await send({ event: 'A03', control: 'R1', encounter: 'E5', bed: 'B1', facility: 'A', at: '202601051000' }), {
    code: 'AA',
    text: /^parked: encounter E5 has no active occupant/,
  })
  t.match(await send({ event: 'A01', control: 'R2', encounter: 'E5', bed: 'B5', facility: 'B', at: '202601050900' }), {
    text: 'applied',
  })
  const [parked] = await listed(app, tokens.adminA)
  t.match(parked, { controlId: 'R1', facility: 'A' })
  const stayInB = (await occupants(app, adminB))[0]
  const hidden = await app.inject({ url: `/ward-occupants/${stayInB?.id}`, headers: bearer(tokens.adminA) })
  t.equal(hidden.statusCode, 404, "the stay in B is a record A's admin may not even read")

  for (const token of [tokens.adminA, tokens.admin]) {
    const res = await app.inject({
      method: 'POST',
      url: `/hl7/messages/${parked?.id}/retry`,
      headers: bearer(token),
    })
    t.equal(res.statusCode, 409)
    t.match(res.json(), { code: 'HL7_FACILITY_CHANGED', message: /parked under facility A/ })
    t.notMatch(res.json().message, /facility B/)
  }
  t.same(await active(app, tokens.admin), ['B/E5'], "B's patient is not discharged")
  const still = await app.inject({ url: `/hl7/messages/${parked?.id}`, headers: bearer(tokens.adminA) })
  t.match(still.json(), { status: 'parked', facility: 'A' })
  const byB = await app.inject({ method: 'POST', url: `/hl7/messages/${parked?.id}/retry`, headers: bearer(adminB) })
  t.equal(byB.statusCode, 404, "B's admin does not see A's message")
})

test('a retry where the encounter is now in the same facility applies it', async (t) => {
  const { app, tokens, send } = await twoWards(t)
  await send({ event: 'A03', control: 'S1', encounter: 'E6', bed: 'B1', facility: 'A', at: '202601051000' })
  await send({ event: 'A01', control: 'S2', encounter: 'E6', bed: 'B1', facility: 'A', at: '202601050900' })
  const [parked] = await listed(app, tokens.adminA)
  const res = await app.inject({
    method: 'POST',
    url: `/hl7/messages/${parked?.id}/retry`,
    headers: bearer(tokens.adminA),
  })
  t.equal(res.statusCode, 200, res.body)
  t.match(res.json(), { status: 'applied', facility: 'A', resolvedBy: 'admin-a' })
  t.same(await active(app, tokens.admin), [])
})

test("an A17 filed under A naming a patient of B: parked, its reason names neither B nor B's bed", async (t) => {
  const { app, tokens, send } = await twoWards(t)
  await send({
    event: 'A01',
    control: 'W1',
    encounter: 'E1',
    patient: 'P-1',
    bed: 'B1',
    facility: 'A',
    at: '202601051000',
  })
  await send({
    event: 'A01',
    control: 'W2',
    encounter: 'E2',
    patient: 'P-2',
    bed: 'B7',
    facility: 'B',
    at: '202601051000',
  })
  const ack = await send({
    event: 'A17',
    type: 'ADT^A17^ADT_A17',
    control: 'W3',
    encounter: 'E1',
    patient: 'P-1',
    bed: 'B1',
    facility: 'A',
    swap: { patient: 'P-2', encounter: 'E2', bed: 'B2' },
    at: '202601051100',
  })
  t.match(ack, { code: 'AA', text: /^parked: / })
  t.notMatch(ack.text, /\bB7?\b/, "the ACK names neither B nor B's bed")
  const [parked] = await listed(app, tokens.adminA)
  t.equal(parked?.controlId, 'W3')
  t.notMatch(parked?.error, /\bB7?\b/, "nor does the reason A's admin reads")
  t.same(await active(app, tokens.admin), ['A/E1', 'B/E2'])
})

test("bed events filed under A for a patient of B: parked, the reason tells nothing of B's stay", async (t) => {
  const { app, tokens, send } = await twoWards(t)
  await send({
    event: 'A01',
    control: 'L1',
    encounter: 'E2',
    patient: 'P-2',
    bed: 'B7',
    facility: 'B',
    at: '202601051000',
  })
  t.equal(
    (await send({ event: 'A21', control: 'L2', encounter: 'E2', facility: 'B', at: '202601051010' })).text,
    'applied',
  )
  const cases: [string, string][] = [
    [
      (await send({ event: 'A14', control: 'L3', encounter: 'E2', bed: 'B3', facility: 'A', at: '202601051100' })).text,
      'A14',
    ],
    [(await send({ event: 'A21', control: 'L4', encounter: 'E2', facility: 'A', at: '202601051100' })).text, 'A21'],
  ]
  for (const [text, what] of cases) {
    t.match(text, /^parked: /, what)
    t.notMatch(text, /\bB7?\b/, `${what}: not B's bed`)
    t.notMatch(text, /on leave/, `${what}: nor whether B's patient is on leave`)
  }
  t.same(
    (await listed(app, tokens.adminA)).map((m) => [m.controlId, /\bB7?\b|on leave/.test(m.error)]),
    [
      ['L4', false],
      ['L3', false],
    ],
  )
})

test("an A50 filed under A leaves B's message log as it was, and names no other facility", async (t) => {
  const { app, adminB, send } = await twoWards(t)
  // B's discharge of visit X, parked under B (no stay yet); A then admits a visit X of its own.
  t.match(await send({ event: 'A03', control: 'N1', encounter: 'X', bed: 'B5', facility: 'B', at: '202601051000' }), {
    text: /^parked: /,
  })
  await send({ event: 'A01', control: 'N2', encounter: 'X', bed: 'B1', facility: 'A', at: '202601051010' })
  const renumber = (control: string, facility: string, at: string) =>
    send({
      event: 'A50',
      type: 'ADT^A50^ADT_A50',
      control,
      encounter: 'Y',
      bed: 'B1',
      facility,
      mrg: { visit: 'X' },
      at,
    })
  t.equal((await renumber('N3', 'A', '202601051100')).text, 'applied')
  const res = await app.inject({ url: '/hl7/messages?status=parked', headers: bearer(adminB) })
  t.same(
    res.json().hl7Messages.map((m: { controlId: string; encounter: string }) => [m.controlId, m.encounter]),
    [['N1', 'X']],
    "B's parked message keeps B's visit number",
  )
  // Visit Y's stay is in A: an A50 naming C says so without naming A.
  await send({ event: 'A01', control: 'N4', encounter: 'Z', bed: 'B2', facility: 'A', at: '202601051110' })
  const ack = await send({
    event: 'A50',
    type: 'ADT^A50^ADT_A50',
    control: 'N5',
    encounter: 'Q',
    facility: 'C',
    mrg: { visit: 'Z' },
    at: '202601051120',
  })
  t.match(ack.text, /^parked: /)
  t.notMatch(ack.text, /facility A\b/, 'the reason does not name the facility of the stay')
})
