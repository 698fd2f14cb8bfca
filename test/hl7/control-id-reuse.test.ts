import { test } from 'tap'
import { bearer, buildTestApp, type TestApp } from '../helper.js'
import { ackOf, openSender } from './client.js'
import { adt } from './messages.js'
import { answeredThenRestarted } from './restart.js'
import { occupants } from './ward.js'

// A sender whose control ids restart (a reinstall, a counter reset) sends a new message under an
// id it used before. Exactly-once must not take it for a resend: that admission would be lost
// behind the old message's AA.

async function messageLog(app: TestApp, token: string) {
  const res = await app.inject({ method: 'GET', url: '/hl7/messages', headers: bearer(token) })
  return res.json().hl7Messages as Record<string, unknown>[]
}

test('a control id already answered, with other content: AR on MSH-10, nothing changed, logged', async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0 })
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  const first = await sender.send(adt({ event: 'A01', control: 'C-1', encounter: 'E1', bed: 'B1' }))
  t.equal(ackOf(first).code, 'AA')

  const reused = adt({ event: 'A01', control: 'C-1', encounter: 'E2', bed: 'B2', patient: 'P-2' })
  const refusal = ackOf(await sender.send(reused))
  t.equal(refusal.code, 'AR', 'not the stored AA of the other message')
  t.equal(refusal.control, 'C-1')
  t.match(refusal.text, /control id C-1 \(MSH-10\) was already used .* for a different message/)
  t.match(refusal.err, /^ERR\|MSH\^1\^10\^205&Duplicate key identifier\|MSH\^1\^10\|205\^/, 'ERR names MSH-10')
  t.same(
    (await occupants(app, tokens.admin)).map((o) => o.encounter),
    ['E1'],
    'the ward is as the first message left it',
  )

  const log = await messageLog(app, tokens.admin)
  t.equal(log.length, 2, 'both are in the message log')
  const [refused, answered] = log
  t.match(answered, { controlId: 'C-1', status: 'applied', encounter: 'E1' })
  t.match(refused, {
    controlId: 'C-1',
    status: 'rejected',
    ackCode: 'AR',
    errorField: 'MSH-10',
    controlIdUsedBy: answered?.id,
  })
  t.equal(refused?.facility, undefined, 'nobody\u2019s ward: only an admin bound to no facility sees it')

  const again = await sender.send(reused)
  t.equal(ackOf(again).code, 'AR', 'the refused message resent: its stored AR again')
  t.equal((await messageLog(app, tokens.admin)).length, 2, 'and no second row')
  const third = ackOf(await sender.send(adt({ event: 'A03', control: 'C-1', encounter: 'E1' })))
  t.equal(third.code, 'AR', 'a third message under the same id is refused too')
  t.same(
    (await occupants(app, tokens.admin)).map((o) => [o.encounter, o.dischargedAt]),
    [['E1', undefined]],
  )
})

test('a resend whose segment ends an engine rewrote (CR, CRLF, LF) is the same message', async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0 })
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  const fields = { event: 'A01', control: 'FRAMING', encounter: 'E1', bed: 'B1', zSegment: true }
  const first = await sender.send(adt({ ...fields, segmentEnd: '\r' }))
  t.equal(await sender.send(adt({ ...fields, segmentEnd: '\r\n' })), first, 'CRLF: the stored ACK, byte for byte')
  t.equal(await sender.send(`${adt({ ...fields, segmentEnd: '\r' })}\r`), first, 'a last CR: the same')
  t.equal((await occupants(app, tokens.admin)).length, 1)
  // Anything in a segment counts, even a re-stamped MSH-7 (docs/ADT.md, "Exactly once").
  const restamped = ackOf(await sender.send(adt({ ...fields, at: '20260105103001' })))
  t.equal(restamped.code, 'AR')
  t.equal((await occupants(app, tokens.admin)).length, 1)
})

test('after a restart: the same content gets the stored ACK, other content AR', async (t) => {
  const a01 = adt({ event: 'A01', control: '1', encounter: 'E1', bed: 'B1' })
  // The sender was reinstalled as well as the server restarted: its counter starts at 1 again.
  const { first, app: after, admin, sender: sender2 } = await answeredThenRestarted(t, a01)
  t.equal(await sender2.send(a01), first, 'a resend of the answered message')
  const next = ackOf(await sender2.send(adt({ event: 'A01', control: '1', encounter: 'E9', bed: 'B9' })))
  t.equal(next.code, 'AR')
  t.same(
    (await occupants(after, admin)).map((o) => o.encounter),
    ['E1'],
  )
})

test('a message logged before digests were kept (no digest) keeps the stored-ACK behaviour', async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0 })
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  const first = await sender.send(adt({ event: 'A01', control: 'OLD-1', encounter: 'E1', bed: 'B1' }))
  // As a row written by 0.7.x looks after migration 15.
  await app.writes.run(() => app.db.prepare('UPDATE hl7_messages SET digest = NULL').run())
  const other = await sender.send(adt({ event: 'A01', control: 'OLD-1', encounter: 'E2', bed: 'B2' }))
  t.equal(other, first, 'the stored ACK: what it said cannot be compared')
  t.equal((await occupants(app, tokens.admin)).length, 1)
  t.equal((await messageLog(app, tokens.admin)).length, 1)
})
