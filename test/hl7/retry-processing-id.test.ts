import { join } from 'node:path'
import { type Test, test } from 'tap'
import { buildApp } from '../../app.js'
import { defaultConfig } from '../../config.js'
import { bearer } from '../helper.js'
import { sharedCompilers } from '../shared-compilers.js'
import { ackOf, openSender } from './client.js'
import { adt } from './messages.js'
import { occupants } from './ward.js'

/** Starts the ward on the test's database file with HL7_PROCESSING_IDS `ids`, listening for ADT. */
function starter(t: Test) {
  const base = {
    DATABASE_PATH: join(t.testdir(), 'ward.db'),
    LOG_LEVEL: 'silent',
    RATE_LIMIT_MAX: 0,
    HL7_TIMEZONE: 'UTC',
  }
  return (ids: string) => buildApp(defaultConfig({ ...base, HL7_PORT: 0, HL7_PROCESSING_IDS: ids }), sharedCompilers)
}

/**
 * HL7_PROCESSING_IDS is the ward's rule, as HL7_A08_TRANSFERS is: a retry follows today's. A training
 * message parked while the ward took training messages, retried after it stopped, is not applied:
 * 409 HL7_STILL_PARKED with the reason, the message still parked; taken again, it is applied.
 */
test('a parked message whose processing id the ward no longer takes stays parked on a retry, saying why', async (t) => {
  const start = starter(t)
  const training = await start('P,T')
  const sender = await openSender(training.hl7.port as number)
  const send = async (fields: Parameters<typeof adt>[0]) =>
    ackOf(await sender.send(adt(fields).replace(`|${fields.control}|P|`, `|${fields.control}|T|`)))
  t.equal((await send({ event: 'A01', control: 'M1', encounter: 'E1', bed: 'B1', at: '202601051000' })).text, 'applied')
  t.match(
    (await send({ event: 'A01', control: 'M2', encounter: 'E2', bed: 'B1', at: '202601051100' })).text,
    /^parked: bed B1 is occupied/,
  )
  t.equal((await send({ event: 'A03', control: 'M3', encounter: 'E1', at: '202601051030' })).text, 'applied')
  await sender.close()
  await training.close()

  const production = await start('P')
  const admin = production.tokens.create({ account: 'admin-1', role: 'admin' }).token
  const parked = await production.inject({ url: '/hl7/messages?status=parked', headers: bearer(admin) })
  const id = parked.json().hl7Messages.find((m: { controlId: string }) => m.controlId === 'M2').id
  const refused = await production.inject({ method: 'POST', url: `/hl7/messages/${id}/retry`, headers: bearer(admin) })
  t.equal(refused.statusCode, 409, refused.body)
  t.match(refused.json(), { code: 'HL7_STILL_PARKED', message: /processing id T .*HL7_PROCESSING_IDS allows P/ })
  const still = await production.inject({ url: `/hl7/messages/${id}`, headers: bearer(admin) })
  t.equal(still.json().status, 'parked', 'still parked, to retry or dismiss')
  t.same(
    (await occupants(production, admin)).map((o) => o.encounter),
    ['E1'],
    'nothing applied',
  )
  await production.close()

  const again = await start('P,T')
  t.teardown(() => again.close())
  const admin2 = again.tokens.create({ account: 'admin-2', role: 'admin' }).token
  const applied = await again.inject({ method: 'POST', url: `/hl7/messages/${id}/retry`, headers: bearer(admin2) })
  t.equal(applied.statusCode, 200, applied.body)
  t.equal(applied.json().status, 'applied')
})

test('a resolved message is not parked, whatever the processing ids of today: 409 HL7_NOT_PARKED', async (t) => {
  const start = starter(t)
  const training = await start('P,T')
  const sender = await openSender(training.hl7.port as number)
  const training1 = adt({ event: 'A01', control: 'M1', encounter: 'E1', bed: 'B1', at: '202601051000' })
  t.equal(ackOf(await sender.send(training1.replace('|M1|P|', '|M1|T|'))).text, 'applied')
  await sender.close()
  await training.close()

  const production = await start('P')
  t.teardown(() => production.close())
  const sender2 = await openSender(production.hl7.port as number)
  t.teardown(() => sender2.close())
  const training2 = adt({ event: 'A01', control: 'M2', encounter: 'E2', bed: 'B2', at: '202601051100' })
  t.equal(ackOf(await sender2.send(training2.replace('|M2|P|', '|M2|T|'))).code, 'AR', 'refused as it comes')
  const admin = production.tokens.create({ account: 'admin-1', role: 'admin' }).token
  const log = (await production.inject({ url: '/hl7/messages', headers: bearer(admin) })).json().hl7Messages
  for (const [control, status] of [
    ['M1', 'applied'],
    ['M2', 'rejected'],
  ]) {
    const message = log.find((m: { controlId: string }) => m.controlId === control)
    t.equal(message.status, status)
    const retried = await production.inject({
      method: 'POST',
      url: `/hl7/messages/${message.id}/retry`,
      headers: bearer(admin),
    })
    t.equal(retried.statusCode, 409, `${status}: ${retried.body}`)
    t.match(retried.json(), { code: 'HL7_NOT_PARKED', message: `HL7 message ${message.id} is ${status}, not parked` })
  }
})
