import { test } from 'tap'
import { bearer, buildTestApp } from '../helper.js'
import { ackOf, frame, openRawSocket, openSender } from './client.js'
import { adt } from './messages.js'
import { answeredThenRestarted } from './restart.js'
import { occupants } from './ward.js'

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

test('a resend after a restart gets the stored ACK: the log is in the database', async (t) => {
  const a01 = adt({ event: 'A01', control: 'RESTART-1', encounter: 'E1', bed: 'B1' })
  const { first, app: after, admin, sender: sender2 } = await answeredThenRestarted(t, a01)
  t.equal(await sender2.send(a01), first)
  t.equal((await occupants(after, admin)).length, 1)
})

test('one connection is applied in the order sent; several connections work at once', async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0 })
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
  t.match(e1, [
    { bed: 'B1', dischargedAt: Number },
    { bed: 'B2', dischargedAt: Number },
  ])
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
  t.match(active, [{ bed: 'B2' }], 'nothing changed')
  const parked = await app.inject({ method: 'GET', url: '/hl7/messages?status=parked', headers: bearer(tokens.admin) })
  t.match(parked.json(), { total: 1, hl7Messages: [{ controlId: 'X3', parkCode: 'out-of-order' }] })
})
