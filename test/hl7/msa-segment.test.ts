import { test } from 'tap'
import { buildTestApp } from '../helper.js'
import { ackOf, openSender } from './client.js'
import { adt } from './messages.js'
import { activeBeds } from './ward.js'

// Some engines copy an MSA segment into what they forward. The MLLP library takes such a message for
// an answer to something it sent and warns; the message is still the sender's, and gets its ACK.
test('a message that carries an MSA segment is applied and acknowledged AA, and the connection goes on', async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0 })
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  const withMsa = `${adt({ event: 'A01', control: 'MSA-1', encounter: 'E1', bed: 'B1', facility: 'A' })}\rMSA|AA|XYZ`
  const ack = ackOf(await sender.send(withMsa))
  t.match(ack, { code: 'AA', control: 'MSA-1' }, 'its own ACK')
  const next = ackOf(
    await sender.send(adt({ event: 'A01', control: 'MSA-2', encounter: 'E2', bed: 'B2', facility: 'A' })),
  )
  t.match(next, { code: 'AA', control: 'MSA-2' }, 'the same connection answers the next one')
  t.same(await activeBeds(app, tokens.admin), { E1: 'A/B1', E2: 'A/B2' })
})
