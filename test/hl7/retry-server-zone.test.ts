import { join } from 'node:path'
import { test } from 'tap'
import { buildApp } from '../../app.js'
import { defaultConfig } from '../../config.js'
import { bearer } from '../helper.js'
import { ackOf, openSender } from './client.js'
import { adt } from './messages.js'
import { occupants } from './ward.js'

// Without HL7_TIMEZONE the ADT feed reads times in the server's zone, which the service asks Intl
// for only when a message is first read. A server without an ADT listener reads it at the first
// retry of a parked message: that retry must still read the message's times in the server's zone.
// Alone in its process: it sets TZ (restored at the end).

test("a retry on a server without an ADT listener reads times in the server's zone", async (t) => {
  const zone = process.env.TZ
  t.teardown(() => {
    if (zone === undefined) delete process.env.TZ
    else process.env.TZ = zone
  })
  const base = { DATABASE_PATH: join(t.testdir(), 'ward.db'), LOG_LEVEL: 'silent', RATE_LIMIT_MAX: 0 }
  const listening = await buildApp(defaultConfig({ ...base, HL7_PORT: 0, HL7_TIMEZONE: 'UTC' }))
  const sender = await openSender(listening.hl7.port as number)
  const texts = [
    ackOf(await sender.send(adt({ event: 'A01', control: 'M1', encounter: 'E1', bed: 'B1', at: '202601051000' }))),
    ackOf(await sender.send(adt({ event: 'A01', control: 'M2', encounter: 'E2', bed: 'B1', at: '202601051100' }))),
    ackOf(await sender.send(adt({ event: 'A03', control: 'M3', encounter: 'E1', at: '202601051030' }))),
  ].map((ack) => ack.text)
  await sender.close()
  await listening.close()
  t.match(texts, ['applied', /^parked: bed B1 is occupied/, 'applied'])

  process.env.TZ = 'America/New_York'
  const app = await buildApp(defaultConfig(base))
  t.teardown(() => app.close())
  t.equal(app.hl7.port, null, 'no ADT listener')
  const admin = app.tokens.create({ account: 'admin-1', role: 'admin' }).token
  // Parked as 0.7.x did, without the settings of its receipt: the retry reads it with today's.
  await app.writes.run(() => app.db.prepare("UPDATE hl7_messages SET read_with = NULL WHERE control_id = 'M2'").run())
  const list = await app.inject({ method: 'GET', url: '/hl7/messages?status=parked', headers: bearer(admin) })
  const id = list.json().hl7Messages.find((m: { controlId: string }) => m.controlId === 'M2').id
  const res = await app.inject({ method: 'POST', url: `/hl7/messages/${id}/retry`, headers: bearer(admin) })
  t.equal(res.statusCode, 200, res.body)
  const e2 = (await occupants(app, admin)).filter((o) => o.encounter === 'E2')
  t.match(e2, [{ bed: 'B1', occupiedAt: Date.UTC(2026, 0, 5, 16, 0) }], "11:00 in New York, the server's zone")
})
