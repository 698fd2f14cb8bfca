import { once } from 'node:events'
import { test } from 'tap'
import { bearer, buildTestApp } from '../helper.js'
import { ackOf, frame, openRawSocket, openSender } from './client.js'
import { adt } from './messages.js'
import { occupants } from './ward.js'

const closed = (socket: import('node:net').Socket) =>
  socket.destroyed ? Promise.resolve() : once(socket, 'close').then(() => undefined)

test('a frame larger than HL7_MAX_MESSAGE_BYTES gets AR naming the limit, and the connection closes', async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0, HL7_MAX_MESSAGE_BYTES: 2048 })
  const raw = await openRawSocket(app.hl7.port as number)
  const big = `${adt({ event: 'A01', control: 'BIG', encounter: 'E1', bed: 'B1' })}\rNTE|1||${'x'.repeat(4000)}`
  raw.socket.write(frame(big))
  const [ack] = await raw.next(1)
  t.match(ackOf(ack as string), { code: 'AR', control: 'BIG', text: /larger than 2048 bytes/ })
  await closed(raw.socket)
  t.same(await occupants(app, tokens.admin), [])
  // The listener goes on for everyone else.
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  t.equal(ackOf(await sender.send(adt({ event: 'A01', control: 'OK', encounter: 'E1', bed: 'B1' }))).code, 'AA')
})

test('bytes outside any frame, or a frame that never ends, close the connection; others go on', async (t) => {
  const { app } = await buildTestApp(t, { HL7_PORT: 0, HL7_FRAME_TIMEOUT_MS: 300 })
  const port = app.hl7.port as number
  const garbage = await openRawSocket(port)
  garbage.socket.write(Buffer.alloc(5000, 0x41))
  await closed(garbage.socket)
  t.ok(garbage.socket.destroyed, 'garbage: closed')

  const stuck = await openRawSocket(port)
  stuck.socket.write(Buffer.concat([Buffer.from([0x0b]), Buffer.from('MSH|^~\\&|HIS|GENERAL|')]))
  // While one connection hangs mid-frame, another is answered.
  const sender = await openSender(port)
  t.teardown(() => sender.close())
  t.equal(ackOf(await sender.send(adt({ event: 'A01', control: 'LIVE', encounter: 'E1', bed: 'B1' }))).code, 'AA')
  await closed(stuck.socket)
  t.ok(stuck.socket.destroyed, 'unfinished frame: closed after HL7_FRAME_TIMEOUT_MS')
})

test('a frame that is not HL7 gets AR without a control id, and the connection closes', async (t) => {
  const { app } = await buildTestApp(t, { HL7_PORT: 0 })
  const raw = await openRawSocket(app.hl7.port as number)
  raw.socket.write(frame('HELLO|this is not HL7'))
  const [ack] = await raw.next(1)
  t.match(ackOf(ack as string), { code: 'AR', control: '', text: /not an HL7 v2 message/ })
  await closed(raw.socket)
})

test('a ward field longer than the API takes gets AR naming it over ADT, as the API refuses it', async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0 })
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  const long = 'x'.repeat(300_000)
  const bed = ackOf(await sender.send(adt({ event: 'A01', control: 'L1', encounter: 'E1', bed: long, facility: 'A' })))
  t.match(bed, { code: 'AR', control: 'L1', text: /PV1-3\.3 \(bed\) is longer than 200 characters/ })
  t.match(bed.err, /^ERR\|PV1\^1\^3\^1\^3\^102&Data type error\|PV1\^1\^3\^1\^3\|102\^/, 'ERR names PV1-3.3')
  const facility = ackOf(
    await sender.send(adt({ event: 'A01', control: 'L2', encounter: 'E1', bed: 'B1', facility: long })),
  )
  t.match(facility, { code: 'AR', text: /PV1-3\.4 \(facility\) is longer than 200/ })
  t.same(await occupants(app, tokens.admin), [], 'nothing stored')
  const api = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(tokens.admin),
    payload: { encounter: 'E1', bed: 'x'.repeat(201), occupiedBy: 'P-1', facility: 'A' },
  })
  t.equal(api.statusCode, 400, 'the API refuses the same length')
  t.equal(
    ackOf(await sender.send(adt({ event: 'A01', control: 'L3', encounter: 'E1', bed: 'x'.repeat(200) }))).code,
    'AA',
  )
})

test('a sender not in HL7_ALLOWED_SENDERS gets AR on MSH-3 and changes nothing', async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0, HL7_ALLOWED_SENDERS: 'HIS^GENERAL' })
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  const stranger = ackOf(
    await sender.send(adt({ event: 'A01', control: 'S1', sender: 'ROGUE', encounter: 'E1', bed: 'B1' })),
  )
  t.match(stranger, { code: 'AR', err: /MSH\^1\^3/, text: /sender ROGUE of GENERAL .* is not in HL7_ALLOWED_SENDERS/ })
  t.same(await occupants(app, tokens.admin), [])
  t.equal(app.db.prepare('SELECT count(*) FROM hl7_messages').pluck().get(), 0, "a stranger's message is not logged")
  const known = ackOf(await sender.send(adt({ event: 'A01', control: 'S2', encounter: 'E1', bed: 'B1' })))
  t.equal(known.code, 'AA')
})

test('a client address not in HL7_ALLOWED_ADDRESSES is disconnected before anything is read', async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0, HL7_ALLOWED_ADDRESSES: '10.0.0.0/8' })
  const raw = await openRawSocket(app.hl7.port as number)
  raw.socket.write(frame(adt({ event: 'A01', control: 'N1', encounter: 'E1', bed: 'B1' })))
  await closed(raw.socket)
  t.same(raw.acks, [])
  t.same(await occupants(app, tokens.admin), [])
})

test('closing the app answers the messages in hand, then closes the connections', async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0 })
  const raw = await openRawSocket(app.hl7.port as number)
  const batch = [1, 2, 3, 4, 5].map((i) =>
    frame(adt({ event: 'A01', control: `H${i}`, encounter: `E${i}`, bed: `B${i}` })),
  )
  raw.socket.write(Buffer.concat(batch))
  // Wait until the listener holds them (the first ACK is out), then close while the rest are in hand.
  await raw.next(1)
  const admin = tokens.admin
  const count = (await occupants(app, admin)).length
  t.ok(count >= 1)
  await app.close()
  await closed(raw.socket)
  t.same(
    raw.acks.map((a) => ackOf(a).code),
    ['AA', 'AA', 'AA', 'AA', 'AA'],
    'every message received before the close was answered',
  )
})
