import { type Test, test } from 'tap'
import type { Config } from '../../config.js'
import { bearer, type TestApp } from '../helper.js'
import { feedWard, occupants } from './ward.js'

const F = 'FAC1'

/** An A20: MSH, EVN and NPU (bed location, bed status): no patient, no visit. */
function a20(control: string, bed: string, status: string, at = '20260105103000', facility = F): string {
  return [
    `MSH|^~\\&|HIS|GENERAL|WARD|FS|${at}||ADT^A20^ADT_A20|${control}|P|2.5.1`,
    `EVN|A20|${at}`,
    `NPU|W1^R1^${bed}^${facility}|${status}`,
  ].join('\r')
}

const ward = (t: Test, overrides: Partial<Config> = {}) => feedWard(t, F, overrides)

async function bedOf(app: TestApp, token: string, bed: string) {
  const res = await app.inject({ url: `/beds?facility=${F}`, headers: bearer(token) })
  return (res.json().beds as { bed: string }[]).find((b) => b.bed === bed) as Record<string, unknown> | undefined
}

async function parkCodes(app: TestApp, token: string): Promise<string[]> {
  const res = await app.inject({ url: '/hl7/messages?status=parked', headers: bearer(token) })
  return res.json().hl7Messages.map((m: { parkCode: string }) => m.parkCode)
}

test('A20 sets the bed status of table 0116 and O/U clear it, audited and on the feed as the bed-states resource', async (t) => {
  const { app, tokens, send, raw } = await ward(t)
  t.equal((await send({ event: 'A01', encounter: 'E1', bed: 'B1', at: '202601050900' })).code, 'AA')
  t.equal((await send({ event: 'A03', encounter: 'E1', at: '202601051000' })).code, 'AA')
  for (const [code, state] of [
    ['H', 'cleaning'],
    ['K', 'contaminated'],
    ['I', 'isolated'],
    ['C', 'closed'],
  ] as const) {
    const ack = await raw(a20(`S-${code}`, 'B1', code, '20260105110000'))
    t.equal(ack.code, 'AA', `${code}: AA`)
    t.match(
      await bedOf(app, tokens.admin, 'B1'),
      { state, housekeeping: { state, setBy: 'hl7:HIS' } },
      `${code}: ${state}`,
    )
  }
  const audit = await app.inject({ url: '/audit?resource=bed-states', headers: bearer(tokens.admin) })
  t.equal(audit.json().entries.length, 4)
  t.match(audit.json().entries[0], { account: 'hl7:HIS', tokenId: 'hl7:HIS/S-H', facility: F, recordId: 'B1' })
  const events = app.db.prepare(`SELECT count(*) FROM feed_events WHERE resource = 'bed-states'`).pluck().get()
  t.equal(events, 4)
  t.equal((await raw(a20('S-U', 'B1', 'U', '20260105120000'))).code, 'AA')
  t.match(await bedOf(app, tokens.admin, 'B1'), { state: 'free' })
  t.notOk((await bedOf(app, tokens.admin, 'B1'))?.housekeeping)
  const row = app.db.prepare(`SELECT encounter, facility, status FROM hl7_messages WHERE control_id = 'S-U'`).get()
  t.same(row, { encounter: null, facility: F, status: 'applied' }, 'an A20 names no encounter')
})

test('A20 refusals and parking reasons', async (t) => {
  const { app, tokens, send, raw } = await ward(t)
  const bad = await raw(a20('R1', 'B1', 'X'))
  t.equal(bad.code, 'AR')
  t.match(bad.err, /NPU\^1\^2|NPU-2|103/)
  t.equal((await raw(a20('R2', '', 'C'))).code, 'AR', 'no bed')
  t.equal((await raw(a20('R3', 'B1', ''))).code, 'AR', 'no status')
  const noNpu = `MSH|^~\\&|HIS|GENERAL|WARD|FS|20260105103000||ADT^A20^ADT_A20|R4|P|2.5.1\rEVN|A20|20260105103000`
  t.equal((await raw(noNpu)).code, 'AR', 'no NPU segment')
  t.match((await raw(a20('P1', 'NOWHERE', 'C'))).text, /^parked: .*not a bed of the ward/)
  await send({ event: 'A01', encounter: 'E1', bed: 'B1', at: '202601050900' })
  t.match((await raw(a20('P2', 'B1', 'U'))).text, /^parked: .*active stay/)
  t.equal((await raw(a20('S1', 'B1', 'I', '20260105120000'))).code, 'AA')
  t.match((await raw(a20('P3', 'B1', 'C', '20260105110000'))).text, /^parked: .*older/)
  t.same((await parkCodes(app, tokens.admin)).reverse(), ['unknown-bed', 'bed-occupied', 'out-of-order'])
  t.match(await bedOf(app, tokens.admin, 'B1'), { state: 'occupied', housekeeping: { state: 'isolated' } })
  // The unknown bed listed, the parked A20 applies on a retry.
  app.repos.beds.add({ facility: F, bed: 'NOWHERE' })
  const id = app.db.prepare(`SELECT id FROM hl7_messages WHERE control_id = 'P1'`).pluck().get() as string
  const retried = await app.inject({ method: 'POST', url: `/hl7/messages/${id}/retry`, headers: bearer(tokens.admin) })
  t.equal(retried.statusCode, 200, retried.body)
  t.match(retried.json(), { status: 'applied' })
  t.match(await bedOf(app, tokens.admin, 'NOWHERE'), { state: 'closed' })
})

test('an ADT admission into a closed bed is applied, and the ward is notified', async (t) => {
  const { app, tokens, send, raw } = await ward(t)
  app.repos.beds.add({ facility: F, bed: 'B7' })
  t.equal((await raw(a20('S1', 'B7', 'C'))).code, 'AA')
  const api = await app.inject({
    method: 'POST',
    url: `/ward-occupants?facility=${F}`,
    headers: bearer(tokens.admin),
    payload: { facility: F, encounter: 'E0', bed: 'B7', occupiedBy: 'p' },
  })
  t.equal(api.statusCode, 409, 'the API refuses it')
  t.equal(api.json().code, 'BED_NOT_AVAILABLE')
  t.equal((await send({ event: 'A01', encounter: 'E1', bed: 'B7', at: '202601051100' })).code, 'AA')
  t.match(await occupants(app, tokens.admin), [{ bed: 'B7', encounter: 'E1' }], 'the HIS decides')
  const notes = await app.inject({ url: '/notifications', headers: bearer(tokens.admin) })
  const codes = notes.json().notifications.map((n: { code: string }) => n.code)
  t.ok(codes.includes('bed-not-available'), 'the ward is told')
  t.match(
    notes.json().notifications.find((n: { code: string }) => n.code === 'bed-not-available'),
    { facility: F, title: /Bed B7 is closed/, meta: { bed: 'B7', encounter: 'E1', state: 'closed' } },
  )
  t.match(await bedOf(app, tokens.admin, 'B7'), { state: 'occupied', housekeeping: { state: 'closed' } })
})

// The messages' times are in January 2026: the expectations are kept until cleared (0) unless said.
test('A14 expects a patient in a bed; A01 into it clears it; A27 cancels', async (t) => {
  const { app, tokens, send } = await ward(t, { BED_EXPECTED_HOURS: 0 })
  t.equal((await send({ event: 'A14', encounter: 'E1', bed: 'B1', at: '202601050900' })).code, 'AA')
  t.match(await bedOf(app, tokens.admin, 'B1'), {
    state: 'expected',
    expected: { encounter: 'E1', kind: 'admission', since: Date.UTC(2026, 0, 5, 9) },
  })
  const notes = await app.inject({ url: '/notifications', headers: bearer(tokens.admin) })
  t.match(notes.json().notifications[0], {
    code: 'patient-expected',
    facility: F,
    body: 'Encounter E1 is expected in bed B1 (a pending admission).',
  })
  t.equal((await send({ event: 'A01', encounter: 'E1', bed: 'B1', at: '202601051000' })).code, 'AA')
  const admitted = await bedOf(app, tokens.admin, 'B1')
  t.match(admitted, { state: 'occupied' })
  t.notOk(admitted?.expected, 'the admission clears it')
  t.equal((await send({ event: 'A14', encounter: 'E2', bed: 'B2', at: '202601051000' })).code, 'AA')
  t.equal((await send({ event: 'A27', encounter: 'E2', at: '202601051100' })).code, 'AA')
  t.notOk(await bedOf(app, tokens.admin, 'B2'), 'cancelled: the bed was known only by it')
  t.match((await send({ event: 'A27', encounter: 'E2', at: '202601051200' })).text, /^parked: .*no pending admission/)
  t.match((await send({ event: 'A14', encounter: 'E1', bed: 'B3', at: '202601051200' })).text, /^parked: .*already in/)
  t.equal((await send({ event: 'A14', encounter: 'E3', at: '202601051200' })).code, 'AR', 'A14 needs the bed')
  t.same((await parkCodes(app, tokens.admin)).reverse(), ['nothing-to-cancel', 'already-admitted'])
})

test('an expectation older than BED_EXPECTED_HOURS is not shown', async (t) => {
  const { app, tokens, send } = await ward(t, { BED_EXPECTED_HOURS: 1 })
  app.repos.beds.add({ facility: F, bed: 'B1' })
  t.equal((await send({ event: 'A14', encounter: 'E1', bed: 'B1', at: '202601050900' })).code, 'AA')
  t.match(await bedOf(app, tokens.admin, 'B1'), { state: 'free' }, 'sent on 2026-01-05: long past the hour')
  t.notOk((await bedOf(app, tokens.admin, 'B1'))?.expected)
  // One sent now is shown, with the time it runs out (the board drops it then).
  const now = new Date(Math.floor(Date.now() / 1000) * 1000)
  const at = now.toISOString().replace(/[-:T]/g, '').slice(0, 14)
  t.equal((await send({ event: 'A14', encounter: 'E2', bed: 'B2', at })).code, 'AA')
  t.match(await bedOf(app, tokens.admin, 'B2'), {
    state: 'expected',
    expected: { encounter: 'E2', since: now.getTime(), until: now.getTime() + 3_600_000 },
  })
})

test('A15 expects the patient in the pending bed (PV2-1, else PV1-3); A02 there clears it; A26 cancels', async (t) => {
  const { app, tokens, send } = await ward(t, { BED_EXPECTED_HOURS: 0 })
  await send({ event: 'A01', encounter: 'E1', bed: 'B1', at: '202601050900' })
  t.equal(
    (await send({ event: 'A15', encounter: 'E1', bed: 'B1', pv2: `W1^R2^B2^${F}`, at: '202601051000' })).code,
    'AA',
  )
  t.match(await bedOf(app, tokens.admin, 'B2'), { state: 'expected', expected: { encounter: 'E1', kind: 'transfer' } })
  t.match(await bedOf(app, tokens.admin, 'B1'), { state: 'occupied' }, 'the patient is still in B1')
  t.equal((await send({ event: 'A02', encounter: 'E1', bed: 'B2', at: '202601051100' })).code, 'AA')
  t.match(await bedOf(app, tokens.admin, 'B2'), { state: 'occupied' })
  t.notOk((await bedOf(app, tokens.admin, 'B2'))?.expected)
  // Without PV2-1, PV1-3 is the pending bed.
  t.equal((await send({ event: 'A15', encounter: 'E1', bed: 'B3', at: '202601051200' })).code, 'AA')
  t.match(await bedOf(app, tokens.admin, 'B3'), { state: 'expected' })
  t.equal((await send({ event: 'A26', encounter: 'E1', at: '202601051300' })).code, 'AA')
  t.notOk(await bedOf(app, tokens.admin, 'B3'))
  t.match((await send({ event: 'A15', encounter: 'E1', bed: 'B2', at: '202601051400' })).text, /^parked: .*PV2-1/)
  t.match((await send({ event: 'A15', encounter: 'E9', bed: 'B4', at: '202601051400' })).text, /^parked: .*no active/)
  t.match((await send({ event: 'A26', encounter: 'E1', at: '202601051500' })).text, /^parked: .*no pending transfer/)
  t.same((await parkCodes(app, tokens.admin)).reverse(), ['no-pending-location', 'not-admitted', 'nothing-to-cancel'])
})

test('A16 marks a discharge expected, A25 cancels it, A03 ends it', async (t) => {
  const { app, tokens, send } = await ward(t)
  await send({ event: 'A01', encounter: 'E1', bed: 'B1', at: '202601050900' })
  const id = (await occupants(app, tokens.admin))[0]?.id
  t.equal((await send({ event: 'A16', encounter: 'E1', at: '202601051000' })).code, 'AA')
  t.match(await bedOf(app, tokens.admin, 'B1'), {
    state: 'occupied',
    dischargeExpected: [{ wardOccupantId: id, since: Date.UTC(2026, 0, 5, 10) }],
  })
  t.equal((await send({ event: 'A25', encounter: 'E1', at: '202601051100' })).code, 'AA')
  t.notOk((await bedOf(app, tokens.admin, 'B1'))?.dischargeExpected)
  t.match((await send({ event: 'A25', encounter: 'E1', at: '202601051200' })).text, /^parked: /)
  t.equal((await send({ event: 'A16', encounter: 'E1', at: '202601051300' })).code, 'AA')
  t.equal((await send({ event: 'A03', encounter: 'E1', at: '202601051400' })).code, 'AA')
  const after = await bedOf(app, tokens.admin, 'B1')
  t.match(after, { state: 'free' })
  t.notOk(after?.dischargeExpected, 'the discharge ends the mark')
  t.match((await send({ event: 'A16', encounter: 'E1', at: '202601051500' })).text, /^parked: .*no active/)
  t.same((await parkCodes(app, tokens.admin)).reverse(), ['nothing-to-cancel', 'not-admitted'])
})

test('A21 leave out, A22 return, A52 and A53 their cancels: the stay stays active and the bed kept', async (t) => {
  const { app, tokens, send } = await ward(t)
  await send({ event: 'A01', encounter: 'E1', bed: 'B1', at: '202601050900' })
  t.equal((await send({ event: 'A21', encounter: 'E1', at: '202601051000' })).code, 'AA')
  const notes = await app.inject({ url: '/notifications', headers: bearer(tokens.admin) })
  t.match(
    notes.json().notifications.find((n: { code: string }) => n.code === 'patient-on-leave'),
    { facility: F, title: 'Patient on leave, bed B1', body: 'The patient of bed B1 is on leave; the bed is kept.' },
  )
  t.match(await bedOf(app, tokens.admin, 'B1'), { state: 'on-leave', onLeave: [{ since: Date.UTC(2026, 0, 5, 10) }] })
  t.match(await occupants(app, tokens.admin), [{ bed: 'B1', dischargedAt: undefined }], 'the stay is active')
  const api = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(tokens.admin),
    payload: { facility: F, encounter: 'E2', bed: 'B1', occupiedBy: 'p2' },
  })
  t.equal(api.statusCode, 409, 'the bed is kept')
  t.match((await send({ event: 'A21', encounter: 'E1', at: '202601051030' })).text, /^parked: .*already on leave/)
  t.equal((await send({ event: 'A52', encounter: 'E1', at: '202601051100' })).code, 'AA')
  t.match(await bedOf(app, tokens.admin, 'B1'), { state: 'occupied' })
  t.match((await send({ event: 'A22', encounter: 'E1', at: '202601051130' })).text, /^parked: .*not on leave/)
  t.equal((await send({ event: 'A21', encounter: 'E1', at: '202601051200' })).code, 'AA')
  t.equal((await send({ event: 'A22', encounter: 'E1', at: '202601051300' })).code, 'AA')
  t.match(await bedOf(app, tokens.admin, 'B1'), { state: 'occupied' })
  t.equal((await send({ event: 'A53', encounter: 'E1', at: '202601051400' })).code, 'AA')
  t.match(await bedOf(app, tokens.admin, 'B1'), { state: 'on-leave' }, 'the return cancelled: away again')
  t.match((await send({ event: 'A53', encounter: 'E1', at: '202601051500' })).text, /^parked: /)
  t.match((await send({ event: 'A21', encounter: 'E9', at: '202601051500' })).text, /^parked: .*no active/)
  t.same((await parkCodes(app, tokens.admin)).reverse(), [
    'already-on-leave',
    'not-on-leave',
    'nothing-to-cancel',
    'not-admitted',
  ])
  const audit = await app.inject({ url: '/audit?resource=bed-states', headers: bearer(tokens.admin) })
  t.equal(audit.json().entries.length, 5, 'each applied event one audit entry')
})

test('A01 then A11 into a mistyped bed leaves no phantom bed', async (t) => {
  const { app, tokens, send } = await ward(t)
  t.equal((await send({ event: 'A01', encounter: 'E1', bed: 'B1O', at: '202601050900' })).code, 'AA')
  t.ok(await bedOf(app, tokens.admin, 'B1O'))
  t.equal((await send({ event: 'A11', encounter: 'E1', at: '202601050901' })).code, 'AA')
  t.notOk(await bedOf(app, tokens.admin, 'B1O'), 'the cancelled-only bed is not a bed of the ward')
  t.equal(app.db.prepare('SELECT count(*) FROM seen_beds').pluck().get(), 0)
})

test('an admission or transfer into another bed of the facility than the one expected ends the expectation', async (t) => {
  const { app, tokens, send } = await ward(t, { BED_EXPECTED_HOURS: 0 })
  t.equal((await send({ event: 'A14', encounter: 'E1', bed: 'B3', at: '202601050900' })).code, 'AA')
  t.equal((await send({ event: 'A01', encounter: 'E1', bed: 'B5', at: '202601051000' })).text, 'applied')
  t.notOk((await bedOf(app, tokens.admin, 'B3'))?.expected, 'B3 no longer expects the patient now in B5')
  t.equal(
    (await send({ event: 'A15', encounter: 'E1', bed: 'B5', pv2: `W1^R2^B6^${F}`, at: '202601051100' })).code,
    'AA',
  )
  t.equal((await send({ event: 'A02', encounter: 'E1', bed: 'B7', at: '202601051200' })).text, 'applied')
  t.notOk((await bedOf(app, tokens.admin, 'B6'))?.expected, 'B6 no longer expects the patient now in B7')
  // An expectation in another facility is that facility's: an admission here leaves it.
  t.equal((await send({ event: 'A14', encounter: 'E2', bed: 'B1', facility: 'OTHER', at: '202601051300' })).code, 'AA')
  t.equal((await send({ event: 'A01', encounter: 'E2', bed: 'B2', at: '202601051400' })).text, 'applied')
  const other = await app.inject({ url: '/beds?facility=OTHER', headers: bearer(tokens.admin) })
  t.match(
    other.json().beds.find((b: { bed: string }) => b.bed === 'B1'),
    { expected: { encounter: 'E2' } },
  )
})

test("A50: the visit's pending transfer follows its new number; A26 and the transfer under it clear it", async (t) => {
  const { app, tokens, send } = await ward(t, { BED_EXPECTED_HOURS: 0 })
  await send({ event: 'A01', encounter: 'E1', bed: 'B1', at: '202601050900' })
  t.equal((await send({ event: 'A15', encounter: 'E1', bed: 'B2', at: '202601051000' })).code, 'AA')
  const renumbered = await send({ event: 'A50', encounter: 'V1', mrg: { visit: 'E1' }, at: '202601051100' })
  t.equal(renumbered.text, 'applied')
  t.match(await bedOf(app, tokens.admin, 'B2'), { state: 'expected', expected: { encounter: 'V1', kind: 'transfer' } })
  t.equal((await send({ event: 'A26', encounter: 'V1', at: '202601051200' })).text, 'applied', 'cancelled by V1')
  t.notOk(await bedOf(app, tokens.admin, 'B2'))
  // Expected again, then met by the transfer under the new number.
  t.equal((await send({ event: 'A15', encounter: 'V1', bed: 'B3', at: '202601051300' })).code, 'AA')
  t.equal((await send({ event: 'A50', encounter: 'V2', mrg: { visit: 'V1' }, at: '202601051400' })).text, 'applied')
  t.equal((await send({ event: 'A02', encounter: 'V2', bed: 'B3', at: '202601051500' })).text, 'applied')
  const arrived = await bedOf(app, tokens.admin, 'B3')
  t.match(arrived, { state: 'occupied', active: [{ encounter: 'V2' }] })
  t.notOk(arrived?.expected, 'the transfer met it')
  const audit = await app.inject({ url: '/audit?resource=bed-states&recordId=B2', headers: bearer(tokens.admin) })
  t.ok(audit.json().entries.length >= 3, 'set, renumbered and cancelled: each audited')
})

test("A50 moves only its own facility's expectation of the visit: another ward's stays that ward's", async (t) => {
  const { app, tokens, send } = await ward(t, { BED_EXPECTED_HOURS: 0 })
  t.equal((await send({ event: 'A14', encounter: 'E1', bed: 'B2', facility: 'OTHER', at: '202601050900' })).code, 'AA')
  t.equal((await send({ event: 'A01', encounter: 'E1', bed: 'B1', at: '202601051000' })).text, 'applied')
  const other = async () =>
    (await app.inject({ url: '/beds?facility=OTHER', headers: bearer(tokens.admin) }))
      .json()
      .beds.find((b: { bed: string }) => b.bed === 'B2')
  t.match(await other(), { expected: { encounter: 'E1' } }, 'OTHER still expects E1 after its admission in FAC1')
  t.equal((await send({ event: 'A50', encounter: 'V1', mrg: { visit: 'E1' }, at: '202601051100' })).text, 'applied')
  t.match(await other(), { expected: { encounter: 'E1' } }, "OTHER's expectation keeps the number it was sent with")
})
