import { test } from 'tap'
import { loadConfig } from '../../config.js'
import { buildTestApp } from '../helper.js'
import { ackOf, frame, openRawSocket } from './client.js'
import { adt } from './messages.js'
import { occupants } from './ward.js'

// HL7_ALLOWED_SENDERS filters what an admitted client claims in MSH-3/MSH-4 (docs/ADT.md, "Who may
// send"); an entry bound to an address is taken from that client address only.

async function clientAt(port: number, localAddress: string) {
  const raw = await openRawSocket(port, localAddress)
  let sent = 0
  return {
    close: () => raw.socket.destroy(),
    async send(control: string, sender: string) {
      raw.socket.write(frame(adt({ event: 'A01', control, sender, encounter: `E-${control}`, bed: `B-${control}` })))
      sent++
      return ackOf((await raw.next(sent))[sent - 1] as string)
    },
  }
}

test('a sender bound to an address is taken from that address only; an unbound one from any admitted client', async (t) => {
  const { app, tokens } = await buildTestApp(t, {
    HL7_PORT: 0,
    HL7_ALLOWED_SENDERS: 'HIS^GENERAL@127.0.0.1, LAB^GENERAL@127.0.0.2/32, ENGINE^GENERAL',
  })
  const port = app.hl7.port as number
  const one = await clientAt(port, '127.0.0.1')
  const two = await clientAt(port, '127.0.0.2')
  t.teardown(() => {
    one.close()
    two.close()
  })
  t.equal((await one.send('H1', 'HIS')).code, 'AA', 'HIS from its address')
  t.equal((await two.send('L1', 'LAB')).code, 'AA', 'LAB from its address')
  t.equal((await one.send('N1', 'ENGINE')).code, 'AA', 'an unbound entry from one client')
  t.equal((await two.send('N2', 'ENGINE')).code, 'AA', 'and from the other')
  const posing = await two.send('H2', 'HIS')
  t.match(posing, { code: 'AR', err: /MSH\^1\^3/, text: /sender HIS of GENERAL .* may not send from 127\.0\.0\.2/ })
  t.match(await one.send('L2', 'LAB'), { code: 'AR', text: /may not send from 127\.0\.0\.1/ })
  t.match(await one.send('S1', 'ROGUE'), { code: 'AR', text: /is not in HL7_ALLOWED_SENDERS/ })
  const admitted = (await occupants(app, tokens.admin)).map((o: { encounter: string }) => o.encounter).sort()
  t.same(admitted, ['E-H1', 'E-L1', 'E-N1', 'E-N2'], 'only the allowed ones changed the ward')
})

test('HL7_ALLOWED_SENDERS is checked at start, its addresses too', async (t) => {
  t.ok(loadConfig({ HL7_ALLOWED_SENDERS: 'HIS^GENERAL@10.1.2.3, HIS^GENERAL@10.9.0.0/16, LAB^GENERAL' }))
  for (const wrong of ['HIS^GENERAL@', '@10.1.2.3', 'HIS^GENERAL@10.1.2.300', 'HIS^GENERAL@10.0.0.0/33'])
    t.throws(() => loadConfig({ HL7_ALLOWED_SENDERS: wrong }), /HL7_ALLOWED_SENDERS/, wrong)
})
