import { test } from 'tap'
import { bearer, buildTestApp } from '../helper.js'
import { ackOf, openSender } from './client.js'
import { adt } from './messages.js'

// An ignored or rejected message belongs to no ward, yet its text may name a patient of any
// facility: only an admin bound to no facility may read it, whatever HL7_DEFAULT_FACILITY says.
test('ignored and rejected messages are shown to no facility-bound admin', async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0, HL7_DEFAULT_FACILITY: 'A' })
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  const sent = [
    // A patient update of facility B: acknowledged and ignored, its demographics kept.
    adt({ event: 'A31', control: 'IGN-1', encounter: 'E-B', bed: 'B1', facility: 'B' }),
    // An admission without its encounter (PV1-19): rejected.
    adt({ event: 'A01', control: 'REJ-1', bed: 'B2', facility: 'B' }),
  ]
  const codes = []
  for (const text of sent) codes.push(ackOf(await sender.send(text)).code)
  t.same(codes, ['AA', 'AR'], 'one ignored, one rejected')
  const list = async (token: string) =>
    (await app.inject({ url: '/hl7/messages', headers: bearer(token) })).json().hl7Messages as { id: string }[]
  const all = await list(tokens.admin)
  t.equal(all.length, 2, 'the operator sees both')
  t.same(await list(tokens.adminA), [], "the default facility's admin sees neither")
  for (const { id } of all) {
    const res = await app.inject({ url: `/hl7/messages/${id}`, headers: bearer(tokens.adminA) })
    t.equal(res.statusCode, 404, 'nor reads one by its id')
  }
})
