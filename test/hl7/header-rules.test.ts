import { test } from 'tap'
import { buildTestApp } from '../helper.js'
import { ackOf, frame, openRawSocket, openSender } from './client.js'
import { adt } from './messages.js'
import { activeBeds } from './ward.js'

/** An A01 with its MSH-11, MSH-12 and MSH-15/16 as given (P, 2.5.1 and none unless set). */
function admission(control: string, header: { processing?: string; version?: string; ack?: string } = {}): string {
  const text = adt({ event: 'A01', control, encounter: `E-${control}`, bed: `B-${control}`, facility: 'A' })
  return text.replace(
    `|${control}|P|2.5.1`,
    `|${control}|${header.processing ?? 'P'}|${header.version ?? '2.5.1'}${header.ack ?? ''}`,
  )
}

/** ERR-2 and ERR-3 of an ACK: where and which table 0357 code. */
function errOf(err: string | null): { where: string; code: string } {
  const fields = (err ?? '').split('|')
  return { where: fields[2] ?? '', code: (fields[3] ?? '').split('^')[0] ?? '' }
}

/** A raw socket that sends one frame at a time and reads its ACK (no client's own checks of the message). */
async function rawSender(t: Parameters<typeof buildTestApp>[0], port: number) {
  const raw = await openRawSocket(port)
  t.teardown(() => raw.socket.destroy())
  let sent = 0
  return async (text: string) => {
    sent++
    raw.socket.write(frame(text))
    return ackOf((await raw.next(sent)).at(-1) as string)
  }
}

test('MSH-11: only the processing ids HL7_PROCESSING_IDS allows reach the ward', async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0 })
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  for (const processing of ['T', 'D', '']) {
    const ack = ackOf(await sender.send(admission(`X${processing}`, { processing })))
    t.equal(ack.code, 'AR', `MSH-11 ${processing || '(empty)'}: AR`)
    t.match(errOf(ack.err), { where: 'MSH^1^11', code: processing === '' ? '101' : '202' })
    if (processing !== '') t.match(ack.text, /HL7_PROCESSING_IDS allows P/)
  }
  t.same(await activeBeds(app, tokens.admin), {}, 'a test message changes nothing on the ward')
  t.equal(ackOf(await sender.send(admission('XP'))).code, 'AA', 'a production message is applied')
  t.same(await activeBeds(app, tokens.admin), { 'E-XP': 'A/B-XP' })
})

test('HL7_PROCESSING_IDS=P,T applies training messages too; D still gets AR', async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0, HL7_PROCESSING_IDS: 'P, T' })
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  t.equal(ackOf(await sender.send(admission('T1', { processing: 'T' }))).code, 'AA')
  t.equal(ackOf(await sender.send(admission('D1', { processing: 'D' }))).code, 'AR')
  t.same(await activeBeds(app, tokens.admin), { 'E-T1': 'A/B-T1' })
})

/** MSH-11 of an ACK. */
const ackProcessingId = (ack: string) => (ack.split('\r')[0] ?? '').split('|')[10]

test("an ACK's MSH-11 is the message's own processing id, whatever the answer", async (t) => {
  const { app } = await buildTestApp(t, { HL7_PORT: 0, HL7_PROCESSING_IDS: 'T' })
  const raw = await openRawSocket(app.hl7.port as number)
  t.teardown(() => raw.socket.destroy())
  const answers: string[] = []
  for (const [i, processing] of ['T', 'P', 'D', 'T^A', 'X&Y', ''].entries()) {
    raw.socket.write(frame(admission(`M${i}`, { processing })))
    answers.push((await raw.next(i + 1)).at(-1) as string)
  }
  t.same(
    answers.map((a) => ackOf(a).code),
    ['AA', 'AR', 'AR', 'AA', 'AR', 'AR'],
  )
  // What is no processing id (table 0103) is not echoed: that answer says production.
  t.same(answers.map(ackProcessingId), ['T', 'P', 'D', 'T^A', 'P', 'P'], "each answer on its sender's channel")
})

test('MSH-12: 2.3 to 2.8.x are read; 2.2, 2.9, 3 and an empty version get AR 203 on MSH-12', async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0 })
  // node-hl7-client refuses to send some of these versions: a raw socket sends them.
  const send = await rawSender(t, app.hl7.port as number)
  const accepted = ['2.3', '2.3.1', '2.4', '2.5', '2.5.1', '2.6', '2.7', '2.7.1', '2.8', '2.8.2']
  for (const [i, version] of accepted.entries())
    t.equal((await send(admission(`V${i}`, { version }))).code, 'AA', `${version}: AA`)
  for (const [i, version] of ['2.2', '2.9', '3.0', '2.10', ''].entries()) {
    const ack = await send(admission(`R${i}`, { version }))
    t.equal(ack.code, 'AR', `${version || '(empty)'}: AR`)
    t.match(errOf(ack.err), { where: 'MSH^1^12', code: version === '' ? '101' : '203' })
    t.match(ack.err, version === '' ? /Required field missing/ : /Unsupported version id/)
  }
  t.equal(Object.keys(await activeBeds(app, tokens.admin)).length, accepted.length, 'only the read versions applied')
})

test('enhanced mode: CA once committed, CR in place of AR; MSH-16 other than NE is refused', async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0 })
  const send = await rawSender(t, app.hl7.port as number)
  // An engine channel waiting for a commit acknowledgement reads MSA-1 CA.
  const committed = await send(admission('C1', { ack: '|||AL|NE' }))
  t.match(committed, { code: 'CA', control: 'C1', text: 'applied' })
  t.same(await activeBeds(app, tokens.admin), { 'E-C1': 'A/B-C1' }, 'the CA came once it was applied')
  t.match(await send(admission('C2', { ack: '|||NE|NE' })), { code: 'CA' }, 'NE: answered all the same')
  t.match(await send(admission('C3', { ack: '|||AL' })), { code: 'CA' }, 'MSH-16 empty: NE')
  const parked = await send(admission('C4', { ack: '|||AL|NE' }).replace('E-C4', 'E-C1'))
  t.match(parked, { code: 'CA', text: /^parked: / }, 'parked is committed too')
  const rejected = await send(admission('C5', { ack: '|||AL|NE', processing: 'T' }))
  t.match(rejected, { code: 'CR', control: 'C5' }, 'CR in place of AR')
  for (const [i, application] of ['AL', 'ER', 'SU'].entries()) {
    const refused = await send(admission(`A${i}`, { ack: `|||AL|${application}` }))
    t.equal(refused.code, 'CR', `MSH-16 ${application}: CR`)
    t.match(errOf(refused.err), { where: 'MSH^1^16' })
    t.match(refused.text, /application acknowledgements/)
  }
  const unknown = await send(admission('U1', { ack: '|||XX|NE' }))
  t.match(unknown, { code: 'CR' })
  t.match(errOf(unknown.err), { where: 'MSH^1^15', code: '102' })
  const original = await send(admission('O1'))
  t.equal(original.code, 'AA', 'without MSH-15/16: original mode')
  t.same(Object.keys(await activeBeds(app, tokens.admin)).sort(), ['E-C1', 'E-C2', 'E-C3', 'E-O1'])
})

test('enhanced mode with a real client: node-hl7-client gets the CA of its message', async (t) => {
  const { app } = await buildTestApp(t, { HL7_PORT: 0 })
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  t.match(ackOf(await sender.send(admission('N1', { ack: '|||AL|NE' }))), { code: 'CA', control: 'N1' })
})
