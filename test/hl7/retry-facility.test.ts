import { join } from 'node:path'
import { test } from 'tap'
import { buildApp } from '../../app.js'
import { defaultConfig } from '../../config.js'
import { bearer, buildTestApp, type TestApp } from '../helper.js'
import { ackOf, openSender } from './client.js'
import { adt } from './messages.js'
import { occupants } from './ward.js'

// A parked message is listed, notified and authorised under the facility it was filed under at
// receipt. Its retry must apply it there, to the patient and at the times it was read as then:
// a facility-bound admin of A must never make a change land in facility B.

async function sendAll(app: TestApp, messages: string[]): Promise<string[]> {
  const sender = await openSender(app.hl7.port as number)
  const texts: string[] = []
  for (const message of messages) texts.push(ackOf(await sender.send(message)).text)
  await sender.close()
  return texts
}

function retry(app: TestApp, token: string, id: string) {
  return app.inject({ method: 'POST', url: `/hl7/messages/${id}/retry`, headers: bearer(token) })
}

async function parkedIds(app: TestApp, token: string): Promise<Record<string, string>> {
  const res = await app.inject({ method: 'GET', url: '/hl7/messages?status=parked', headers: bearer(token) })
  return Object.fromEntries(res.json().hl7Messages.map((m: { controlId: string; id: string }) => [m.controlId, m.id]))
}

test('a retry reads the message with the settings of its receipt, whatever they are today', async (t) => {
  const base = { DATABASE_PATH: join(t.testdir(), 'ward.db'), LOG_LEVEL: 'silent', HL7_PORT: 0, RATE_LIMIT_MAX: 0 }
  const atReceipt = defaultConfig({
    ...base,
    HL7_DEFAULT_FACILITY: 'A',
    HL7_PATIENT_ID_TYPE: 'MR',
    HL7_TIMEZONE: 'Europe/Berlin',
  })
  const before = await buildApp(atReceipt)
  const pid3 = 'P-MR^^^GEN^MR~P-NH^^^GEN^NH'
  t.match(
    await sendAll(before, [
      adt({ event: 'A01', control: 'M1', encounter: 'E1', bed: 'B1', at: '202601051000' }),
      adt({ event: 'A01', control: 'M2', encounter: 'E2', bed: 'B1', pid3, at: '202601051100' }),
      adt({ event: 'A01', control: 'M3', encounter: 'E3', bed: 'B1', pid3, at: '202601051100' }),
    ]),
    ['applied', /^parked: bed B1 of A is occupied/, /^parked: bed B1 of A is occupied/],
    'PV1-3.4 is empty: HL7_DEFAULT_FACILITY (A) is their facility',
  )
  await before.close()

  // Another default facility, patient identifier type and zone since.
  const after = await buildApp(
    defaultConfig({ ...base, HL7_DEFAULT_FACILITY: 'B', HL7_PATIENT_ID_TYPE: 'NH', HL7_TIMEZONE: 'America/New_York' }),
  )
  t.teardown(() => after.close())
  const admin = after.tokens.create({ account: 'admin-1', role: 'admin' }).token
  const adminA = after.tokens.create({ account: 'admin-a', role: 'admin', facility: 'A' }).token
  const parked = await parkedIds(after, adminA)
  t.same(Object.keys(parked).sort(), ['M2', 'M3'], 'both are listed to the admin of A')
  // M3 as 0.7.x parked it: the settings of its receipt were not kept.
  await after.writes.run(() =>
    after.db.prepare("UPDATE hl7_messages SET read_with = NULL WHERE control_id = 'M3'").run(),
  )
  // E1 left at 09:30 UTC (04:30 in today's zone), before E2's admission at 10:00 UTC: no overlap.
  t.match(
    await sendAll(after, [adt({ event: 'A03', control: 'M4', encounter: 'E1', facility: 'A', at: '202601050430' })]),
    ['applied'],
  )

  const legacy = await retry(after, adminA, parked.M3 as string)
  t.equal(legacy.statusCode, 409, 'read with today\u2019s default it is B\u2019s: refused, not applied there')
  t.match(legacy.json(), {
    code: 'HL7_FACILITY_CHANGED',
    message: /parked under facility A and would now apply to another/,
  })
  t.notMatch(legacy.json().message, /facility B/, 'the other facility is not named to an admin of A')

  const res = await retry(after, adminA, parked.M2 as string)
  t.equal(res.statusCode, 200, res.body)
  t.match(res.json(), { status: 'applied', facility: 'A', resolvedBy: 'admin-a' })
  const e2 = (await occupants(after, admin)).filter((o) => o.encounter === 'E2')
  t.match(e2, [{ facility: 'A', bed: 'B1', occupiedBy: 'P-MR', occupiedAt: Date.UTC(2026, 0, 5, 10, 0) }])
  t.equal(e2.length, 1, 'in A, for the MR patient, at 11:00 Berlin time: as it was parked')
  t.same(
    (await occupants(after, admin)).filter((o) => o.facility === 'B'),
    [],
    'nothing landed in B',
  )
})

test("a retry that would land in another facility than the parked message's is 409; nothing changes", async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0 })
  // The discharge came first (filed under A, as its PV1-3.4 says); the admission then put the
  // encounter in B.
  await sendAll(app, [
    adt({ event: 'A03', control: 'D1', encounter: 'E5', facility: 'A', at: '202601051000' }),
    adt({ event: 'A01', control: 'D2', encounter: 'E5', bed: 'B5', facility: 'B', at: '202601050900' }),
  ])
  const { D1: id } = await parkedIds(app, tokens.adminA)
  for (const token of [tokens.adminA, tokens.admin]) {
    const res = await retry(app, token, id as string)
    t.equal(res.statusCode, 409)
    t.equal(res.json().code, 'HL7_FACILITY_CHANGED')
  }
  t.match(await occupants(app, tokens.admin), [{ encounter: 'E5', facility: 'B', dischargedAt: undefined }])
  t.equal((await occupants(app, tokens.admin))[0]?.dischargedAt, undefined, "B's patient is not discharged")
  const still = await app.inject({ method: 'GET', url: `/hl7/messages/${id}`, headers: bearer(tokens.adminA) })
  t.match(still.json(), { status: 'parked', facility: 'A' })
})

test('filed under no facility (only unbound admins see it), a retry goes where its encounter is', async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0 })
  await sendAll(app, [
    adt({ event: 'A03', control: 'N1', encounter: 'E6', at: '202601051000' }),
    adt({ event: 'A01', control: 'N2', encounter: 'E6', bed: 'B6', facility: 'B', at: '202601050900' }),
  ])
  t.same(await parkedIds(app, tokens.adminA), {}, 'not listed to the admin of A')
  const { N1: id } = await parkedIds(app, tokens.admin)
  const res = await retry(app, tokens.admin, id as string)
  t.equal(res.statusCode, 200, res.body)
  t.match(await occupants(app, tokens.admin), [{ encounter: 'E6', facility: 'B', dischargedAt: Number }])
})
