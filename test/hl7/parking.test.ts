import { test } from 'tap'
import { bearer, buildTestApp } from '../helper.js'
import { ackOf, openSender } from './client.js'
import { adt } from './messages.js'
import { activeBeds } from './ward.js'

async function parkingWard(t: Parameters<typeof buildTestApp>[0]) {
  const built = await buildTestApp(t, { HL7_PORT: 0, AUDIT_READS: true })
  const sender = await openSender(built.app.hl7.port as number)
  t.teardown(() => sender.close())
  const send = async (fields: Parameters<typeof adt>[0]) => ackOf(await sender.send(adt(fields)))
  const parked = async (token: string) => {
    const res = await built.app.inject({ method: 'GET', url: '/hl7/messages?status=parked', headers: bearer(token) })
    return res.json()
  }
  return { ...built, send, parked }
}

test('each reason to park: acknowledged, nothing changed, listed with its reason', async (t) => {
  const { app, tokens, send, parked } = await parkingWard(t)
  await send({ event: 'A01', control: 'M1', encounter: 'E1', bed: 'B1', facility: 'A', at: '202601051000' })
  const cases: [Parameters<typeof adt>[0], string][] = [
    [{ event: 'A03', control: 'P1', encounter: 'UNKNOWN', facility: 'A' }, 'not-admitted'],
    [{ event: 'A01', control: 'P2', encounter: 'E2', bed: 'B1', facility: 'A' }, 'bed-occupied'],
    [{ event: 'A01', control: 'P3', encounter: 'E1', bed: 'B9', facility: 'A' }, 'already-admitted'],
    [{ event: 'A13', control: 'P4', encounter: 'E1', facility: 'A' }, 'not-discharged'],
    [{ event: 'A12', control: 'P5', encounter: 'E1', facility: 'A' }, 'nothing-to-cancel'],
    [{ event: 'A02', control: 'P6', encounter: 'E1', bed: 'B2', facility: 'A', at: '202601050900' }, 'out-of-order'],
  ]
  for (const [fields, code] of cases) {
    const ack = await send(fields)
    t.equal(ack.code, 'AA', `${code}: AA`)
    t.match(ack.text, /^parked: /)
  }
  t.same(await activeBeds(app, tokens.admin), { E1: 'A/B1' }, 'nothing changed')
  const list = await parked(tokens.admin)
  t.equal(list.total, cases.length)
  t.same(
    list.hl7Messages.map((m: { parkCode: string }) => m.parkCode).reverse(),
    cases.map(([, code]) => code),
  )
  const health = await app.inject({ method: 'GET', url: '/health' })
  t.match(health.json(), { hl7: { listening: true, parked: cases.length } })
})

test('A13 for a bed taken since is parked; retry after the bed is free applies it; dismiss resolves', async (t) => {
  const { app, tokens, send, parked } = await parkingWard(t)
  await send({ event: 'A01', control: 'M1', encounter: 'E1', bed: 'B1', facility: 'A', at: '202601051000' })
  await send({ event: 'A03', control: 'M2', encounter: 'E1', facility: 'A', at: '202601051100' })
  await send({ event: 'A01', control: 'M3', encounter: 'E2', bed: 'B1', facility: 'A', at: '202601051200' })
  const a13 = await send({ event: 'A13', control: 'M4', encounter: 'E1', facility: 'A', at: '202601051300' })
  t.match(a13.text, /was taken since/)
  const [message] = (await parked(tokens.admin)).hl7Messages
  t.match(message, { controlId: 'M4', parkCode: 'bed-taken-since', facility: 'A' })

  const still = await app.inject({
    method: 'POST',
    url: `/hl7/messages/${message.id}/retry`,
    headers: bearer(tokens.admin),
  })
  t.equal(still.statusCode, 409)
  t.match(still.json(), { code: 'HL7_STILL_PARKED', message: /taken since/ })

  await send({ event: 'A03', control: 'M5', encounter: 'E2', facility: 'A', at: '202601051400' })
  const retried = await app.inject({
    method: 'POST',
    url: `/hl7/messages/${message.id}/retry`,
    headers: bearer(tokens.adminA),
  })
  t.equal(retried.statusCode, 200)
  t.match(retried.json(), { status: 'applied', resolvedBy: 'admin-a' })
  t.same(await activeBeds(app, tokens.admin), { E1: 'A/B1' })
  const again = await app.inject({
    method: 'POST',
    url: `/hl7/messages/${message.id}/retry`,
    headers: bearer(tokens.admin),
  })
  t.equal(again.statusCode, 409, 'a resolved message is not applied twice')
  t.equal(again.json().code, 'HL7_NOT_PARKED')

  await send({ event: 'A03', control: 'M6', encounter: 'NOPE', facility: 'A' })
  const [other] = (await parked(tokens.admin)).hl7Messages
  const dismissed = await app.inject({
    method: 'POST',
    url: `/hl7/messages/${other.id}/dismiss`,
    headers: bearer(tokens.admin),
  })
  t.match(dismissed.json(), { status: 'dismissed', resolvedBy: 'admin-1' })
  t.equal((await parked(tokens.admin)).total, 0)
})

test('a facility-bound admin sees and resolves only its facility; others get 403 or 404', async (t) => {
  const { app, tokens, send, parked } = await parkingWard(t)
  await send({ event: 'A03', control: 'FA', encounter: 'EA', facility: 'A' })
  await send({ event: 'A03', control: 'FB', encounter: 'EB', facility: 'B' })
  t.equal((await parked(tokens.admin)).total, 2)
  const seenByA = await parked(tokens.adminA)
  t.same(
    seenByA.hl7Messages.map((m: { controlId: string }) => m.controlId),
    ['FA'],
  )
  const b = (await parked(tokens.admin)).hl7Messages.find((m: { controlId: string }) => m.controlId === 'FB')
  for (const url of [`/hl7/messages/${b.id}`, `/hl7/messages/${b.id}/retry`, `/hl7/messages/${b.id}/dismiss`]) {
    const res = await app.inject({ method: url.endsWith(b.id) ? 'GET' : 'POST', url, headers: bearer(tokens.adminA) })
    t.equal(res.statusCode, 404, url)
  }
  const writer = await app.inject({ method: 'GET', url: '/hl7/messages', headers: bearer(tokens.write) })
  t.equal(writer.statusCode, 403, 'admins only')
})

test("the message list's total counts the admin's facility only, with or without a status, past the page", async (t) => {
  const { app, tokens, send } = await parkingWard(t)
  await send({ event: 'A03', control: 'FA', encounter: 'EA', facility: 'A' })
  await send({ event: 'A03', control: 'FB', encounter: 'EB', facility: 'B' })
  await send({ event: 'A01', control: 'AA', encounter: 'EA2', bed: 'B1', facility: 'A' })
  await send({ event: 'A01', control: 'AB', encounter: 'EB2', bed: 'B1', facility: 'B' })
  await send({ event: 'A03', control: 'FB2', encounter: 'EB3', facility: 'B' })
  const page = async (token: string, query: string) => {
    const res = await app.inject({ url: `/hl7/messages${query}`, headers: bearer(token) })
    const body = res.json()
    return [body.total, body.hl7Messages.map((m: { controlId: string }) => m.controlId)]
  }
  t.same(await page(tokens.adminA, ''), [2, ['AA', 'FA']], "A's admin: A's two")
  t.same(await page(tokens.adminA, '?status=parked'), [1, ['FA']])
  t.same(await page(tokens.adminA, '?status=applied'), [1, ['AA']])
  t.same(await page(tokens.adminA, '?$limit=1'), [2, ['AA']], 'the total is past the page')
  t.same(await page(tokens.adminA, '?$limit=1&$skip=1'), [2, ['FA']])
  t.same(await page(tokens.admin, '?status=parked'), [3, ['FB2', 'FB', 'FA']], 'the operator: every facility')
  t.same(await page(tokens.admin, '?$limit=2'), [5, ['FB2', 'AB']])
})

test("parking notifies the facility's admins; reads of the log are read-audited; the text is shown to admins only on GET", async (t) => {
  const { app, tokens, send, parked } = await parkingWard(t)
  await send({ event: 'A03', control: 'N1', encounter: 'EA', facility: 'A' })
  const notes = async (token: string) =>
    (await app.inject({ method: 'GET', url: '/notifications', headers: bearer(token) })).json().notifications
  t.match(await notes(tokens.adminA), [{ code: 'hl7-parked', facility: 'A', meta: { parkCode: 'not-admitted' } }])
  t.match(await notes(tokens.admin), [{ code: 'hl7-parked' }])
  t.same(await notes(tokens.writeA), [], 'a nurse of the facility is not told')
  const [message] = (await parked(tokens.admin)).hl7Messages
  t.equal(message.text, undefined, 'no text in lists')
  const one = await app.inject({ method: 'GET', url: `/hl7/messages/${message.id}`, headers: bearer(tokens.admin) })
  t.match(one.json().text, /^MSH\|/)
  await app.writes.run(() => undefined)
  const reads = app.db
    .prepare(`SELECT route FROM read_log WHERE route LIKE '%/hl7/messages%' ORDER BY seq`)
    .pluck()
    .all()
  t.same(reads, ['GET /hl7/messages', 'GET /hl7/messages/:id'])
})
