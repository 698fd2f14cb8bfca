import { type Test, test } from 'tap'
import { bearer, buildTestApp } from '../helper.js'
import { ackOf, openSender } from './client.js'
import { adt } from './messages.js'
import { activeBeds, feedWard, occupants } from './ward.js'

const F = 'FAC1'

const ward = (t: Test) => feedWard(t, F)

test('A01 admits: the bed is occupied, as the API would have made it, with audit, feed and notification', async (t) => {
  const { app, tokens, send } = await ward(t)
  const ack = await send({
    event: 'A01',
    encounter: 'E1',
    bed: 'B1',
    room: 'R1',
    provider: 'DR1',
    at: '20260105103000',
  })
  t.equal(ack.code, 'AA')
  t.equal(ack.control, 'MSG1')
  const [o] = await occupants(app, tokens.admin)
  t.match(o, {
    facility: F,
    room: 'R1',
    bed: 'B1',
    encounter: 'E1',
    occupiedBy: 'P-1',
    provider: 'DR1',
    occupiedAt: Date.UTC(2026, 0, 5, 10, 30),
    createdBy: 'hl7:HIS',
  })
  const audit = await app.inject({
    method: 'GET',
    url: '/audit?resource=ward-occupants',
    headers: bearer(tokens.admin),
  })
  t.match(audit.json().entries, [{ account: 'hl7:HIS', tokenId: 'hl7:HIS/MSG1', operation: 'create', recordId: o?.id }])
  const feed = app.db.prepare(`SELECT resource, action FROM feed_events WHERE resource = 'ward-occupants'`).all()
  t.same(feed, [{ resource: 'ward-occupants', action: 'created' }])
  const notes = await app.inject({ method: 'GET', url: '/notifications', headers: bearer(tokens.admin) })
  t.match(notes.json().notifications, [{ code: 'bed-occupied', facility: F }])
})

test('A02 transfers in one step; A12 cancels it; A03 discharges; A13 cancels that', async (t) => {
  const { app, tokens, send } = await ward(t)
  t.equal((await send({ event: 'A01', encounter: 'E1', bed: 'B1', at: '202601051000' })).code, 'AA')
  t.equal((await send({ event: 'A02', encounter: 'E1', bed: 'B2', at: '202601051100' })).code, 'AA')
  let all = await occupants(app, tokens.admin)
  t.match(all, [
    { bed: 'B1', dischargedAt: Date.UTC(2026, 0, 5, 11), dischargedBy: 'hl7:HIS' },
    { bed: 'B2', occupiedAt: Date.UTC(2026, 0, 5, 11), occupiedBy: 'P-1' },
  ])
  t.equal(all[1]?.dischargedAt, undefined)
  t.equal((await send({ event: 'A12', encounter: 'E1', bed: 'B1', at: '202601051130' })).code, 'AA')
  all = await occupants(app, tokens.admin)
  t.equal(all.length, 1, 'the transfer stay is removed')
  t.match(all[0], { bed: 'B1' })
  t.equal(all[0]?.dischargedAt, undefined, 'the previous stay is active again')
  t.equal((await send({ event: 'A03', encounter: 'E1', at: '202601051200', dischargedAt: '202601051155' })).code, 'AA')
  t.match(await occupants(app, tokens.admin), [{ bed: 'B1', dischargedAt: Date.UTC(2026, 0, 5, 11, 55) }])
  t.equal((await send({ event: 'A13', encounter: 'E1', at: '202601051210' })).code, 'AA')
  t.same(await activeBeds(app, tokens.admin), { E1: `${F}/B1` })
})

test('A08 updates the provider; a location in it is a transfer; A11 cancels the admission', async (t) => {
  const { app, tokens, send } = await ward(t)
  await send({ event: 'A01', encounter: 'E1', bed: 'B1', provider: 'DR1', at: '202601051000' })
  t.equal((await send({ event: 'A08', encounter: 'E1', bed: 'B1', provider: 'DR2', at: '202601051010' })).code, 'AA')
  t.match(await occupants(app, tokens.admin), [{ bed: 'B1', provider: 'DR2' }])
  await send({ event: 'A08', encounter: 'E1', bed: 'B5', at: '202601051020' })
  t.same(await activeBeds(app, tokens.admin), { E1: `${F}/B5` })
  await send({ event: 'A01', encounter: 'E2', bed: 'B7', at: '202601051030' })
  t.equal((await send({ event: 'A11', encounter: 'E2', at: '202601051040' })).code, 'AA')
  t.same(await activeBeds(app, tokens.admin), { E1: `${F}/B5` }, 'the cancelled admission is gone')
  const audit = await app.inject({
    method: 'GET',
    url: '/audit?resource=ward-occupants',
    headers: bearer(tokens.admin),
  })
  const removal = audit.json().entries.find((e: { operation: string }) => e.operation === 'delete')
  t.match(removal, { account: 'hl7:HIS', tokenId: 'hl7:HIS/MSG5' }, 'the audit names the A11 that removed it')
  const log = await app.inject({ method: 'GET', url: '/hl7/messages', headers: bearer(tokens.admin) })
  t.match(log.json().hl7Messages[0], { controlId: 'MSG5', event: 'A11', status: 'applied' })
})

test('other ADT events are acknowledged and logged as ignored; other message types get AR', async (t) => {
  const { app, tokens, send } = await ward(t)
  const a04 = await send({ event: 'A04', encounter: 'E1', bed: 'B1' })
  t.equal(a04.code, 'AA')
  t.match(a04.text, /ignored/)
  const oru = await send({ event: 'R01', type: 'ORU^R01^ORU_R01' })
  t.equal(oru.code, 'AR')
  t.match(oru.err, /MSH\^1\^9/)
  t.same(await occupants(app, tokens.admin), [])
  const log = await app.inject({ method: 'GET', url: '/hl7/messages', headers: bearer(tokens.admin) })
  t.same(
    log.json().hl7Messages.map((m: { status: string; ackCode: string }) => [m.status, m.ackCode]),
    [
      ['rejected', 'AR'],
      ['ignored', 'AA'],
    ],
  )
})

test('v2.3 messages with CRLF, Z-segments and escapes are applied', async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0, HL7_TIMEZONE: 'UTC' })
  const sender = await openSender(app.hl7.port as number, '2.3')
  t.teardown(() => sender.close())
  const text = adt({
    event: 'A01',
    control: 'V23',
    version: '2.3',
    segmentEnd: '\r\n',
    zSegment: true,
    encounter: 'E\\T\\1',
    bed: 'B1',
    facility: F,
    pid3: 'X^^^H^PI~MRN9^^^H^MR',
  })
  t.equal(ackOf(await sender.send(text)).code, 'AA')
  t.match(await occupants(app, tokens.admin), [{ encounter: 'E&1', occupiedBy: 'MRN9', bed: 'B1' }])
})

test('an AR names the missing field: PV1-3 on an A01, PV1-19, PID-3', async (t) => {
  const { app, tokens, send } = await ward(t)
  t.match(await send({ event: 'A01', encounter: 'E1' }), { code: 'AR', err: /PV1\^1\^3/ })
  t.match(await send({ event: 'A01', bed: 'B1' }), { code: 'AR', err: /PV1\^1\^19/ })
  t.match(await send({ event: 'A01', encounter: 'E1', bed: 'B1', pid3: '' }), { code: 'AR', err: /PID\^1\^3/ })
  t.same(await occupants(app, tokens.admin), [])
})
