import { test } from 'tap'
import { bearer, buildTestApp } from '../helper.js'
import { ackOf, frame, openRawSocket, openSender } from './client.js'
import { adt } from './messages.js'
import { answeredThenRestarted } from './restart.js'
import { occupants } from './ward.js'

/** 5 January 2026 at a time of day, UTC (the timestamps the tests send, read in HL7_TIMEZONE=UTC). */
const at = (time: string) => Date.parse(`2026-01-05T${time}:00Z`)

test('a resend of an answered message gets the stored ACK and changes nothing', async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0 })
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  const a01 = adt({ event: 'A01', control: 'SAME', encounter: 'E1', bed: 'B1' })
  const first = await sender.send(a01)
  const again = await sender.send(a01)
  t.equal(again, first, 'the very same ACK')
  t.equal((await occupants(app, tokens.admin)).length, 1)
  // Another sender's message with the same control id is another message.
  const other = ackOf(
    await sender.send(adt({ event: 'A01', control: 'SAME', sender: 'LAB', encounter: 'E2', bed: 'B2' })),
  )
  t.equal(other.code, 'AA')
  t.equal((await occupants(app, tokens.admin)).length, 2)
})

test('the same MSH-3 and MSH-10 from another MSH-4 is another message, not a resend nor a reused id', async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0 })
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  // One interface engine (MSH-3) sending for two hospitals (MSH-4), each with its own counter.
  const general = adt({ event: 'A01', control: 'N-1', senderFacility: 'GENERAL', encounter: 'E1', bed: 'B1' })
  const north = adt({ event: 'A01', control: 'N-1', senderFacility: 'NORTH', encounter: 'E2', bed: 'B2' })
  t.same(ackOf(await sender.send(general)), { code: 'AA', control: 'N-1', text: 'applied', err: null })
  t.same(ackOf(await sender.send(north)), { code: 'AA', control: 'N-1', text: 'applied', err: null })
  // Each resent: its own stored ACK.
  const northAgain = adt({ event: 'A01', control: 'N-1', senderFacility: 'NORTH', encounter: 'E2', bed: 'B2' })
  t.equal(ackOf(await sender.send(northAgain)).code, 'AA')
  t.same(
    (await occupants(app, tokens.admin)).map((o) => [o.encounter, o.bed]),
    [
      ['E1', 'B1'],
      ['E2', 'B2'],
    ],
  )
  const log = await app.inject({ url: '/hl7/messages', headers: bearer(tokens.admin) })
  t.same(
    log.json().hl7Messages.map((m: { sendingFacility: string; status: string }) => [m.sendingFacility, m.status]),
    [
      ['NORTH', 'applied'],
      ['GENERAL', 'applied'],
    ],
  )
})

test('a resend after a restart gets the stored ACK: the log is in the database', async (t) => {
  const a01 = adt({ event: 'A01', control: 'RESTART-1', encounter: 'E1', bed: 'B1' })
  const { first, app: after, admin, sender: sender2 } = await answeredThenRestarted(t, a01)
  t.equal(await sender2.send(a01), first)
  t.equal((await occupants(after, admin)).length, 1)
})

test('one connection is applied in the order sent; several connections work at once', async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0, HL7_TIMEZONE: 'UTC' })
  const port = app.hl7.port as number
  // Pipelined on one socket, without waiting for ACKs: admit, transfer, discharge, in that order.
  const raw = await openRawSocket(port)
  t.teardown(() => raw.socket.destroy())
  raw.socket.write(
    Buffer.concat([
      frame(adt({ event: 'A01', control: 'O1', encounter: 'E1', bed: 'B1', at: '202601051000' })),
      frame(adt({ event: 'A02', control: 'O2', encounter: 'E1', bed: 'B2', at: '202601051001' })),
      frame(adt({ event: 'A03', control: 'O3', encounter: 'E1', at: '202601051002' })),
    ]),
  )
  const parallel = await Promise.all(
    [1, 2, 3, 4].map(async (i) => {
      const s = await openSender(port)
      const ack = await s.send(adt({ event: 'A01', control: `P${i}`, encounter: `EP${i}`, bed: `BP${i}` }))
      await s.close()
      return ackOf(ack).code
    }),
  )
  t.same(parallel, ['AA', 'AA', 'AA', 'AA'])
  t.same(
    (await raw.next(3)).map((a) => ackOf(a).control),
    ['O1', 'O2', 'O3'],
    'ACKs in the order received',
  )
  const e1 = (await occupants(app, tokens.admin)).filter((o) => o.encounter === 'E1')
  t.same(
    e1.map((o) => [o.bed, o.occupiedAt, o.dischargedAt]),
    [
      ['B1', at('10:00'), at('10:01')],
      ['B2', at('10:01'), at('10:02')],
    ],
  )
})

test('a frame split over many TCP writes, and several frames in one write', async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0 })
  const raw = await openRawSocket(app.hl7.port as number)
  t.teardown(() => raw.socket.destroy())
  const bytes = frame(adt({ event: 'A01', control: 'SPLIT', encounter: 'E1', bed: 'B1' }))
  // One byte a write, each flushed before the next: the end block too is split (FS | CR).
  for (const byte of bytes) {
    raw.socket.write(Buffer.from([byte]))
    await new Promise((resolve) => setImmediate(resolve))
  }
  t.equal(ackOf((await raw.next(1))[0] as string).control, 'SPLIT')
  const two = Buffer.concat([
    frame(adt({ event: 'A01', control: 'TWO-1', encounter: 'E2', bed: 'B2' })),
    frame(adt({ event: 'A01', control: 'TWO-2', encounter: 'E3', bed: 'B3' })),
  ])
  raw.socket.write(two)
  t.same(
    (await raw.next(3)).slice(1).map((a) => ackOf(a)),
    [
      { code: 'AA', control: 'TWO-1', text: 'applied', err: null },
      { code: 'AA', control: 'TWO-2', text: 'applied', err: null },
    ],
  )
  t.equal((await occupants(app, tokens.admin)).length, 3)
})

test('an event older than the last one applied to its encounter is parked, not applied', async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0 })
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  await sender.send(adt({ event: 'A01', control: 'X1', encounter: 'E1', bed: 'B1', at: '202601051000' }))
  await sender.send(adt({ event: 'A02', control: 'X2', encounter: 'E1', bed: 'B2', at: '202601051200' }))
  const late = ackOf(await sender.send(adt({ event: 'A03', control: 'X3', encounter: 'E1', at: '202601051100' })))
  t.equal(late.code, 'AA', 'understood: acknowledged, so the feed goes on')
  t.match(late.text, /parked/)
  const active = (await occupants(app, tokens.admin)).filter((o) => o.dischargedAt === undefined)
  t.same(
    active.map((o) => o.bed),
    ['B2'],
    'nothing changed',
  )
  const parked = await app.inject({ method: 'GET', url: '/hl7/messages?status=parked', headers: bearer(tokens.admin) })
  t.equal(parked.json().total, 1)
  t.same(
    parked.json().hl7Messages.map((m: { controlId: string; parkCode: string }) => [m.controlId, m.parkCode]),
    [['X3', 'out-of-order']],
  )
})

test('events at the same time as the last one applied to their encounter are in order, applied', async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0, HL7_TIMEZONE: 'UTC' })
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  // An admission, its transfer and the provider's update recorded in the same minute (MSH-7/EVN-2
  // to the minute is common), then a discharge in it too.
  const same = '202601051000'
  const sent = [
    adt({ event: 'A01', control: 'T1', encounter: 'E1', bed: 'B1', at: same }),
    adt({ event: 'A02', control: 'T2', encounter: 'E1', bed: 'B2', provider: 'DR2', at: same }),
    adt({ event: 'A08', control: 'T3', encounter: 'E1', provider: 'DR3', at: same }),
    adt({ event: 'A03', control: 'T4', encounter: 'E1', at: same }),
  ]
  const answers = []
  for (const text of sent) answers.push(ackOf(await sender.send(text)).text)
  t.same(answers, ['applied', 'applied', 'applied', 'applied'])
  t.same(
    (await occupants(app, tokens.admin)).map((o) => [o.bed, o.provider, o.occupiedAt, o.dischargedAt]),
    [
      ['B1', undefined, at('10:00'), at('10:00')],
      ['B2', 'DR3', at('10:00'), at('10:00')],
    ],
  )
})
