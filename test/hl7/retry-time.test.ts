import { test } from 'tap'
import { bearer, buildTestApp } from '../helper.js'
import { ackOf, openSender } from './client.js'
import { adt } from './messages.js'
import { type Bed, occupants } from './ward.js'

async function ward(t: Parameters<typeof buildTestApp>[0]) {
  const built = await buildTestApp(t, { HL7_PORT: 0, HL7_TIMEZONE: 'UTC' })
  const sender = await openSender(built.app.hl7.port as number)
  t.teardown(() => sender.close())
  const send = async (fields: Parameters<typeof adt>[0]) => ackOf(await sender.send(adt(fields)))
  const retry = (id: string) =>
    built.app.inject({ method: 'POST', url: `/hl7/messages/${id}/retry`, headers: bearer(built.tokens.admin) })
  const parkedId = async (control: string): Promise<string> => {
    const res = await built.app.inject({
      method: 'GET',
      url: '/hl7/messages?status=parked',
      headers: bearer(built.tokens.admin),
    })
    return res.json().hl7Messages.find((m: { controlId: string }) => m.controlId === control).id
  }
  return { ...built, send, retry, parkedId }
}

/** Two stays of one bed that share a moment. */
function overlaps(stays: Bed[]): [string, string][] {
  const found: [string, string][] = []
  for (const a of stays)
    for (const b of stays)
      if (a.id < b.id && a.bed === b.bed && a.facility === b.facility) {
        const aEnd = a.dischargedAt ?? Number.POSITIVE_INFINITY
        const bEnd = b.dischargedAt ?? Number.POSITIVE_INFINITY
        if (a.occupiedAt < bEnd && b.occupiedAt < aEnd) found.push([a.encounter, b.encounter])
      }
  return found
}

const at = (hhmm: string) => Date.UTC(2026, 0, 5, Number(hhmm.slice(0, 2)), Number(hhmm.slice(2)))

test('a retry applies the event time; a bed freed after it keeps the admission parked, not overlapping', async (t) => {
  const { app, tokens, send, retry, parkedId } = await ward(t)
  await send({ event: 'A01', control: 'M1', encounter: 'E1', bed: 'B1', facility: 'A', at: '202601051000' })
  const parked = await send({
    event: 'A01',
    control: 'M2',
    encounter: 'E2',
    bed: 'B1',
    facility: 'A',
    at: '202601051100',
  })
  t.match(parked.text, /^parked: bed B1 of A is occupied/)
  // The bed is freed at 12:00, after the parked admission's 11:00.
  await send({ event: 'A03', control: 'M3', encounter: 'E1', facility: 'A', at: '202601051200' })
  const res = await retry(await parkedId('M2'))
  t.equal(res.statusCode, 409, res.body)
  t.match(res.json(), {
    code: 'HL7_STILL_PARKED',
    message:
      /bed B1 of A was occupied until 2026-01-05T12:00:00.000Z .*after this event's time 2026-01-05T11:00:00.000Z/,
  })
  const stays = await occupants(app, tokens.admin)
  t.same(
    stays.map((o) => [o.encounter, o.occupiedAt, o.dischargedAt]),
    [['E1', at('1000'), at('1200')]],
  )
  t.same(overlaps(stays), [])
  // The same late admission sent again by the HIS (a new control id) is parked for the same reason.
  const late = await send({
    event: 'A01',
    control: 'M4',
    encounter: 'E2',
    bed: 'B1',
    facility: 'A',
    at: '202601051100',
  })
  t.match(late, { code: 'AA', text: /^parked: bed B1 of A was occupied until/ })
  // With its real time, it is applied.
  const now = await send({ event: 'A01', control: 'M5', encounter: 'E2', bed: 'B1', facility: 'A', at: '202601051300' })
  t.match(now, { code: 'AA', text: 'applied' })
  t.same(overlaps(await occupants(app, tokens.admin)), [])
})

test('a retry after the HIS discharged the bed before the event time applies it at the event time', async (t) => {
  const { app, tokens, send, retry, parkedId } = await ward(t)
  await send({ event: 'A01', control: 'M1', encounter: 'E1', bed: 'B1', facility: 'A', at: '202601051000' })
  await send({ event: 'A01', control: 'M2', encounter: 'E2', bed: 'B1', facility: 'A', at: '202601051100' })
  // The missing discharge, sent late: E1 left at 10:45 (PV1-45).
  await send({
    event: 'A03',
    control: 'M3',
    encounter: 'E1',
    facility: 'A',
    at: '202601051200',
    dischargedAt: '202601051045',
  })
  const res = await retry(await parkedId('M2'))
  t.equal(res.statusCode, 200, res.body)
  const stays = await occupants(app, tokens.admin)
  t.same(
    stays.map((o) => [o.encounter, o.occupiedAt, o.dischargedAt ?? null]),
    [
      ['E1', at('1000'), at('1045')],
      ['E2', at('1100'), null],
    ],
    'E2 from its event time, 11:00, not the time of the retry',
  )
  t.same(overlaps(stays), [])
})

test('a transfer into a bed freed after its time is parked too', async (t) => {
  const { app, tokens, send } = await ward(t)
  await send({ event: 'A01', control: 'M1', encounter: 'E1', bed: 'B1', facility: 'A', at: '202601051000' })
  await send({ event: 'A03', control: 'M2', encounter: 'E1', facility: 'A', at: '202601051200' })
  await send({ event: 'A01', control: 'M3', encounter: 'E2', bed: 'B2', facility: 'A', at: '202601050900' })
  const move = await send({
    event: 'A02',
    control: 'M4',
    encounter: 'E2',
    bed: 'B1',
    facility: 'A',
    at: '202601051100',
  })
  t.match(move, { code: 'AA', text: /^parked: bed B1 of A was occupied until 2026-01-05T12:00:00.000Z/ })
  const stays = await occupants(app, tokens.admin)
  t.same(overlaps(stays), [])
  t.equal(stays.find((o) => o.encounter === 'E2')?.bed, 'B2', 'E2 stays where it was')
})

test('a late admission into a bed used twice since is parked citing the later of the two stays', async (t) => {
  const { app, tokens, send } = await ward(t)
  await send({ event: 'A01', control: 'M1', encounter: 'E1', bed: 'B1', facility: 'A', at: '202601051000' })
  await send({ event: 'A03', control: 'M2', encounter: 'E1', facility: 'A', at: '202601051200' })
  await send({ event: 'A01', control: 'M3', encounter: 'E3', bed: 'B1', facility: 'A', at: '202601051230' })
  await send({ event: 'A03', control: 'M4', encounter: 'E3', facility: 'A', at: '202601051400' })
  const later = (await occupants(app, tokens.admin)).find((o) => o.encounter === 'E3')
  const late = await send({
    event: 'A01',
    control: 'M5',
    encounter: 'E2',
    bed: 'B1',
    facility: 'A',
    at: '202601051100',
  })
  t.match(late, {
    code: 'AA',
    text: `parked: bed B1 of A was occupied until 2026-01-05T14:00:00.000Z (occupant ${later?.id}), after this event's time 2026-01-05T11:00:00.000Z: the stays would overlap`,
  })
})
