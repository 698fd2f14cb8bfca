import { type Test, test } from 'tap'
import { bearer } from '../helper.js'
import { activeBeds, feedWard, occupants } from './ward.js'

/**
 * The ADT events that change who lies where, which patient or which visit (A06, A07, A17, A40,
 * A47, A50, A54, A55), sent as sites send them over a real MLLP connection, and the ward read
 * back through the API.
 */
const F = 'FAC1'
const at = (hhmm: string) => `20260105${hhmm}`
const time = (hhmm: string) => Date.UTC(2026, 0, 5, Number(hhmm.slice(0, 2)), Number(hhmm.slice(2)))

async function ward(t: Test, defaultFacility?: string) {
  const { app, tokens, send } = await feedWard(t, F, defaultFacility ? { HL7_DEFAULT_FACILITY: defaultFacility } : {})
  const log = async () =>
    (await app.inject({ method: 'GET', url: '/hl7/messages?$limit=100', headers: bearer(tokens.admin) })).json()
      .hl7Messages as { id: string; event: string; status: string; parkCode?: string; encounter?: string }[]
  return { app, tokens, send, log }
}

test('A17 swaps two patients in one change: each takes the other bed, with its own patient and doctor', async (t) => {
  const { app, tokens, send } = await ward(t)
  await send({ event: 'A01', encounter: 'E1', patient: 'P-1', bed: 'B1', room: 'R1', provider: 'DR1', at: at('0900') })
  await send({ event: 'A01', encounter: 'E2', patient: 'P-2', bed: 'B2', room: 'R2', provider: 'DR2', at: at('0910') })
  const feedBefore = app.db.prepare('SELECT max(seq) FROM feed_events').pluck().get()
  // As the standard sends it: each group's PV1-3 is the bed the patient goes to.
  const ack = await send({
    event: 'A17',
    type: 'ADT^A17^ADT_A17',
    encounter: 'E1',
    patient: 'P-1',
    bed: 'B2',
    room: 'R2',
    at: at('1000'),
    swap: { patient: 'P-2', encounter: 'E2', bed: 'B1', room: 'R1' },
  })
  t.match(ack, { code: 'AA', text: 'applied' })
  const all = await occupants(app, tokens.admin)
  t.match(all, [
    { encounter: 'E1', bed: 'B1', dischargedAt: time('1000'), dischargedBy: 'hl7:HIS' },
    { encounter: 'E2', bed: 'B2', dischargedAt: time('1000') },
    { encounter: 'E1', bed: 'B2', room: 'R2', occupiedBy: 'P-1', provider: 'DR1', occupiedAt: time('1000') },
    { encounter: 'E2', bed: 'B1', room: 'R1', occupiedBy: 'P-2', provider: 'DR2', occupiedAt: time('1000') },
  ])
  t.same(await activeBeds(app, tokens.admin), { E1: `${F}/B2`, E2: `${F}/B1` })
  const feed = app.db
    .prepare(`SELECT action FROM feed_events WHERE seq > ? AND resource = 'ward-occupants' ORDER BY seq`)
    .pluck()
    .all(feedBefore) as string[]
  t.same(feed, ['patched', 'patched', 'created', 'created'], 'two stays ended, two begun, in one transaction')
  const audit = await app.inject({
    method: 'GET',
    url: '/audit?resource=ward-occupants',
    headers: bearer(tokens.admin),
  })
  t.equal(
    audit.json().entries.filter((e: { tokenId: string }) => e.tokenId === 'hl7:HIS/MSG3').length,
    4,
    'the A17 is in the audit once a change',
  )

  // Swapped back, PV1-3 naming each patient's current bed (as some sites send it): the same exchange.
  t.match(
    await send({
      event: 'A17',
      encounter: 'E1',
      bed: 'B2',
      at: at('1010'),
      swap: { patient: 'P-2', encounter: 'E2', bed: 'B1', provider: 'DR9' },
    }),
    { code: 'AA', text: 'applied' },
  )
  t.same(await activeBeds(app, tokens.admin), { E1: `${F}/B1`, E2: `${F}/B2` })
  t.match((await occupants(app, tokens.admin, '&dischargedAt=null&encounter=E2'))[0], { provider: 'DR9' })
})

test('A17 is parked, naming the encounter, when one of them is not in the beds it names', async (t) => {
  const { app, tokens, send, log } = await ward(t)
  await send({ event: 'A01', encounter: 'E1', patient: 'P-1', bed: 'B1', at: at('0900') })
  await send({ event: 'A01', encounter: 'E2', patient: 'P-2', bed: 'B2', at: at('0910') })
  // E2 moved to B3 meanwhile, and E3 took B2.
  await send({ event: 'A02', encounter: 'E2', bed: 'B3', at: at('0920') })
  await send({ event: 'A01', encounter: 'E3', patient: 'P-3', bed: 'B2', at: at('0930') })
  const before = await occupants(app, tokens.admin)
  const parked = await send({
    event: 'A17',
    encounter: 'E1',
    bed: 'B2',
    at: at('1000'),
    swap: { patient: 'P-2', encounter: 'E2', bed: 'B1' },
  })
  t.match(parked, {
    code: 'AA',
    text: /^parked: encounter E2 is not in bed B2 of FAC1 or bed B1 of FAC1: it is in bed B3/,
  })
  t.same(await occupants(app, tokens.admin), before, 'nothing changed')
  t.match((await log())[0], { event: 'A17', status: 'parked', parkCode: 'not-in-bed' })
  t.match(
    await send({
      event: 'A17',
      encounter: 'E1',
      bed: 'B2',
      at: at('1001'),
      swap: { patient: 'P-9', encounter: 'E9', bed: 'B1' },
    }),
    { code: 'AA', text: /parked: encounter E9 \(second group\) has no active occupant/ },
  )
  t.match(await send({ event: 'A17', encounter: 'E1', bed: 'B2', at: at('1002') }), { code: 'AR', err: /PV1/ })
  t.match(
    await send({
      event: 'A17',
      encounter: 'E1',
      bed: 'B2',
      at: at('1003'),
      swap: { patient: 'P-3', encounter: 'E3', bed: 'B1', facility: 'OTHER' },
    }),
    { code: 'AA', text: /^parked: the A17 names beds of facility FAC1 and of facility OTHER/ },
  )
  t.same(await occupants(app, tokens.admin), before, 'still nothing changed')
})

test('A06 with a bed admits like an A01 (or finds the patient there); A07 discharges; A13 cancels it', async (t) => {
  const { app, tokens, send, log } = await ward(t)
  t.match(await send({ event: 'A06', encounter: 'E1', bed: 'B1', provider: 'DR1', at: at('0900') }), {
    text: 'applied',
  })
  t.match(await occupants(app, tokens.admin), [
    { encounter: 'E1', bed: 'B1', occupiedBy: 'P-1', provider: 'DR1', occupiedAt: time('0900') },
  ])
  t.match(await send({ event: 'A06', encounter: 'E1', bed: 'B1', at: at('0905') }), { text: 'applied' })
  t.equal((await occupants(app, tokens.admin)).length, 1, 'already in that bed: nothing to do')
  t.match(await send({ event: 'A06', encounter: 'E1', bed: 'B4', at: at('0906') }), {
    text: /parked: encounter E1 is already in bed B1/,
  })
  t.match(await send({ event: 'A06', encounter: 'E2', bed: 'B1', at: at('0907') }), { text: /parked: .*occupied/ })
  t.match(await send({ event: 'A07', encounter: 'E1', at: at('1000'), dischargedAt: at('0955') }), { text: 'applied' })
  t.match(await occupants(app, tokens.admin), [{ bed: 'B1', dischargedAt: time('0955'), dischargedBy: 'hl7:HIS' }])
  t.match(await send({ event: 'A07', encounter: 'E1', at: at('1001') }), { text: /parked: .*no active occupant/ })
  t.equal((await send({ event: 'A13', encounter: 'E1', at: at('1010') })).text, 'applied')
  t.same(await activeBeds(app, tokens.admin), { E1: `${F}/B1` })
  t.match(await send({ event: 'A06', encounter: 'E1', bed: 'B1', pid3: '', at: at('1011') }), {
    code: 'AR',
    err: /PID\^1\^3/,
  })
  t.ok((await log()).some((m) => m.event === 'A07' && m.status === 'applied'))
})

test('A54 changes the attending doctor; A55 restores the one PV1-7 names; PV1-7 is required', async (t) => {
  const { app, tokens, send } = await ward(t)
  await send({ event: 'A01', encounter: 'E1', bed: 'B1', provider: 'DR1', at: at('0900') })
  t.equal((await send({ event: 'A54', encounter: 'E1', bed: 'B9', provider: 'DR2', at: at('0910') })).text, 'applied')
  t.match(await occupants(app, tokens.admin), [{ bed: 'B1', provider: 'DR2' }], 'a doctor change never moves')
  t.equal((await send({ event: 'A55', encounter: 'E1', provider: 'DR1', at: at('0920') })).text, 'applied')
  t.match(await occupants(app, tokens.admin), [{ bed: 'B1', provider: 'DR1' }])
  t.match(await send({ event: 'A55', encounter: 'E1', at: at('0930') }), { code: 'AR', err: /PV1\^1\^7/ })
  t.match(await send({ event: 'A54', encounter: 'E7', provider: 'DR3', at: at('0940') }), {
    text: /parked: encounter E7 has no active occupant/,
  })
  t.match(await send({ event: 'A54', encounter: 'E1', provider: 'DR3', at: at('0800') }), { text: /parked: the event/ })
})

test('A40 and A47: the stays of the named facility follow the surviving identifier; unknown MRG-1 is parked', async (t) => {
  // Sites send an A40 without PV1: the facility it names is HL7_DEFAULT_FACILITY.
  const { app, tokens, send, log } = await ward(t, F)
  await send({ event: 'A01', encounter: 'E1', patient: 'OLD', bed: 'B1', at: at('0900') })
  await send({ event: 'A03', encounter: 'E1', at: at('0910') })
  await send({ event: 'A01', encounter: 'E2', patient: 'OLD', bed: 'B2', at: at('0920') })
  await send({ event: 'A01', encounter: 'E5', patient: 'OLD', bed: 'B1', facility: 'OTHER', at: at('0925') })
  const ack = await send({
    event: 'A40',
    type: 'ADT^A40^ADT_A39',
    patient: 'NEW',
    mrg: { patient: 'OLD' },
    noPv1: true,
    at: at('1000'),
  })
  t.equal(ack.text, 'applied')
  const mine = await occupants(app, tokens.admin, `&facility=${F}`)
  t.same(
    mine.map((o) => [o.encounter, o.occupiedBy]),
    [
      ['E1', 'NEW'],
      ['E2', 'NEW'],
    ],
    'active and past stays follow',
  )
  t.match(
    await occupants(app, tokens.admin, '&facility=OTHER'),
    [{ occupiedBy: 'OLD' }],
    'another facility is untouched',
  )
  const [merge] = await log()
  t.match(merge, { event: 'A40', status: 'applied' })
  t.equal(merge?.encounter, undefined, 'a merge names no visit')
  const audit = await app.inject({
    method: 'GET',
    url: '/audit?resource=ward-occupants',
    headers: bearer(tokens.admin),
  })
  t.equal(audit.json().entries.filter((e: { tokenId: string }) => e.tokenId === 'hl7:HIS/MSG5').length, 2)

  t.match(await send({ event: 'A40', patient: 'NEW', mrg: { patient: 'NOBODY' }, noPv1: true, at: at('1010') }), {
    text: /^parked: no stay of facility FAC1 was occupied by patient NOBODY \(MRG-1\)/,
  })
  t.match((await log())[0], { parkCode: 'unknown-patient' })
  t.equal(
    (await send({ event: 'A47', patient: 'NEWEST', mrg: { patient: 'NEW' }, encounter: 'E2', at: at('1020') })).text,
    'applied',
  )
  t.same(
    (await occupants(app, tokens.admin, `&facility=${F}`)).map((o) => o.occupiedBy),
    ['NEWEST', 'NEWEST'],
  )
  t.match(await send({ event: 'A40', patient: 'X', noPv1: true, at: at('1030') }), { code: 'AR', err: /MRG/ })
  t.match(await send({ event: 'A40', patient: 'x'.repeat(201), mrg: { patient: 'NEWEST' }, noPv1: true }), {
    code: 'AR',
    err: /PID\^1\^3/,
  })
})

test('A50: the stays and the message log follow the new visit number; a parked message retried follows it', async (t) => {
  const { app, tokens, send, log } = await ward(t)
  await send({ event: 'A01', encounter: 'V1', bed: 'B1', at: at('0900') })
  await send({ event: 'A02', encounter: 'V1', bed: 'B2', at: at('0910') })
  await send({ event: 'A01', encounter: 'OTHER', patient: 'P-9', bed: 'B3', at: at('0915') })
  // Parked: B3 is taken. After the A50 its retry must find the visit under its new number.
  t.match(await send({ event: 'A02', encounter: 'V1', bed: 'B3', at: at('1030') }), { text: /parked/ })
  const parkedId = (await log())[0]?.id as string
  const ack = await send({
    event: 'A50',
    type: 'ADT^A50^ADT_A50',
    encounter: 'V2',
    bed: 'B2',
    mrg: { visit: 'V1' },
    at: at('1000'),
  })
  t.equal(ack.text, 'applied')
  t.same(
    (await occupants(app, tokens.admin)).filter((o) => o.occupiedBy === 'P-1').map((o) => [o.encounter, o.bed]),
    [
      ['V2', 'B1'],
      ['V2', 'B2'],
    ],
  )
  t.notOk(
    (await log()).some((m) => m.encounter === 'V1'),
    'no message of the log is filed under the old number',
  )
  // The out-of-order check follows the visit: an event older than its last applied one is still late.
  t.match(await send({ event: 'A03', encounter: 'V2', at: at('0930') }), { text: /parked: the event/ })
  await send({ event: 'A03', encounter: 'OTHER', at: at('1005') })
  const retry = await app.inject({
    method: 'POST',
    url: `/hl7/messages/${parkedId}/retry`,
    headers: bearer(tokens.admin),
  })
  t.equal(retry.statusCode, 200, retry.body)
  t.same(await activeBeds(app, tokens.admin), { V2: `${F}/B3` })

  t.match(await send({ event: 'A50', encounter: 'V3', mrg: { visit: 'NOPE' }, at: at('1100') }), {
    text: /^parked: no stay has visit number NOPE \(MRG-5\)/,
  })
  t.match(await send({ event: 'A50', encounter: 'OTHER', mrg: { visit: 'V2' }, at: at('1101') }), {
    text: /^parked: visit number OTHER \(PV1-19\) already belongs/,
  })
  t.match(await send({ event: 'A50', encounter: 'V3', mrg: { visit: 'V2' }, facility: 'ELSEWHERE', at: at('1102') }), {
    text: /^parked: encounter V2 has a stay outside facility ELSEWHERE$/,
  })
  t.same(
    (await log()).slice(0, 3).map((m) => m.parkCode),
    ['other-facility', 'encounter-taken', 'unknown-encounter'],
  )
  t.match(await send({ event: 'A50', encounter: 'V3', at: at('1103') }), { code: 'AR', err: /MRG\^1\^5/ })
  t.match(await send({ event: 'A50', encounter: 'V'.repeat(201), mrg: { visit: 'V2' }, at: at('1104') }), {
    code: 'AR',
    err: /PV1\^1\^19/,
  })
  t.equal((await send({ event: 'A03', encounter: 'V2', at: at('1200') })).text, 'applied', 'later events find it')
})

test('merges and moves the ward cannot follow are parked for an admin; events with no bearing on a bed are ignored', async (t) => {
  const { app, tokens, send, log } = await ward(t)
  await send({ event: 'A01', encounter: 'E1', patient: 'OLD', bed: 'B1', at: at('0900') })
  const before = await occupants(app, tokens.admin)
  const parked = ['A18', 'A23', 'A30', 'A34', 'A36', 'A39', 'A42', 'A43', 'A44', 'A45', 'A46']
  for (const event of parked) {
    const ack = await send({
      event,
      encounter: 'E1',
      patient: 'NEW',
      mrg: { patient: 'OLD', visit: 'E1' },
      at: at('1000'),
    })
    t.match(ack, { code: 'AA', text: new RegExp(`^parked: the ward does not follow an ${event} \\(`) }, event)
  }
  for (const event of [
    'A04',
    'A05',
    'A09',
    'A10',
    'A24',
    'A28',
    'A31',
    'A35',
    'A37',
    'A38',
    'A41',
    'A48',
    'A49',
    'A51',
    'A60',
    'A61',
    'A62',
  ])
    t.match(await send({ event, encounter: 'E1', bed: 'B1', at: at('1000') }), { code: 'AA', text: /^ignored/ }, event)
  t.same(await occupants(app, tokens.admin), before, 'nothing changed')
  const rows = await log()
  t.same(
    rows
      .filter((m) => m.status === 'parked')
      .map((m) => [m.event, m.parkCode])
      .reverse(),
    parked.map((e) => [e, 'not-followed']),
  )
  const notes = await app.inject({
    method: 'GET',
    url: '/notifications?code=hl7-parked',
    headers: bearer(tokens.admin),
  })
  t.ok(notes.json().notifications.length >= 1, 'admins are told')
})

test('A17: a later-arriving event of the second visit older than the swap is out of order, as for the first', async (t) => {
  const { app, tokens, send } = await ward(t)
  await send({ event: 'A01', encounter: 'V1', patient: 'P-1', bed: 'B1', at: at('0900') })
  await send({ event: 'A01', encounter: 'V2', patient: 'P-2', bed: 'B2', at: at('0900') })
  const swap = await send({
    event: 'A17',
    type: 'ADT^A17^ADT_A17',
    encounter: 'V1',
    patient: 'P-1',
    bed: 'B1',
    swap: { patient: 'P-2', encounter: 'V2', bed: 'B2' },
    at: at('1030'),
  })
  t.equal(swap.text, 'applied')
  t.match(await send({ event: 'A03', encounter: 'V1', at: at('1000') }), { text: /^parked: the event/ }, 'first visit')
  t.match(await send({ event: 'A03', encounter: 'V2', at: at('1000') }), { text: /^parked: the event/ }, 'second visit')
  t.same(await activeBeds(app, tokens.admin), { V1: `${F}/B2`, V2: `${F}/B1` })
})
