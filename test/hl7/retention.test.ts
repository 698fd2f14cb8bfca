import { test } from 'tap'
import { bearer, buildTestApp, type TestApp } from '../helper.js'
import { ackOf, openSender } from './client.js'
import { adt } from './messages.js'

const DAY_MS = 86_400_000

// HL7_KEEP_DAYS: past it a logged message keeps nothing of the patient (docs/ADT.md, "The message
// log"); a parked one keeps everything until an admin resolves it. The rows stay for exactly-once.

/** The scheduler's job as it runs each hour, at a time `days` ahead, with HL7_KEEP_DAYS=2. */
const pruneAt = (app: TestApp, days: number) =>
  app.writes.run(() => app.hl7.messages.prune(Date.now() + days * DAY_MS - 2 * DAY_MS))

/** Every column of every row, as one text: what a copy of the database would show. */
const logText = (app: TestApp, controlId?: string) =>
  JSON.stringify(
    app.db
      .prepare('SELECT * FROM hl7_messages WHERE ? IS NULL OR control_id = ?')
      .all(controlId ?? null, controlId ?? null),
  )

test('past HL7_KEEP_DAYS every column naming the patient is cleared, a parked one only once resolved', async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0, HL7_KEEP_DAYS: 2 })
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  const patient = { facility: 'A', patient: 'PAT-SECRET', at: '202601051000' }
  const sent = {
    K1: adt({ ...patient, event: 'A01', control: 'K1', encounter: 'ENC-ONE', bed: 'BED-SECRET' }),
    // Parked: its reason and its ACK name the bed, the encounter in it and the occupant.
    K2: adt({ ...patient, event: 'A01', control: 'K2', encounter: 'ENC-TWO', bed: 'BED-SECRET' }),
    K3: adt({ ...patient, event: 'A01', control: 'K3', encounter: 'ENC-THREE' }),
    K4: adt({ ...patient, event: 'A03', control: 'K4', encounter: 'ENC-FOUR' }),
  }
  const acks: Record<string, string> = {}
  for (const [control, text] of Object.entries(sent)) acks[control] = await sender.send(text)
  t.same(
    Object.values(acks).map((a) => ackOf(a).text.split(':')[0]),
    ['applied', 'parked', 'PV1-3.3 (bed) is empty; an A01 needs the bed it places the patient in', 'parked'],
  )
  t.match(acks.K2, /ENC-ONE|BED-SECRET/, "the parked ACK names the ward's details")
  const ids = Object.fromEntries(
    (await app.inject({ url: '/hl7/messages', headers: bearer(tokens.admin) }))
      .json()
      .hl7Messages.map((m: { controlId: string; id: string }) => [m.controlId, m.id]),
  )
  await app.inject({ method: 'POST', url: `/hl7/messages/${ids.K2}/dismiss`, headers: bearer(tokens.admin) })

  t.equal(await pruneAt(app, 1), 0, 'within HL7_KEEP_DAYS: kept')
  t.equal(await pruneAt(app, 3), 3, 'past it: all but the one still parked')
  for (const control of ['K1', 'K2', 'K3']) {
    const text = logText(app, control)
    for (const secret of ['PAT-SECRET', 'ENC-', 'BED-SECRET', 'Doe'])
      t.notOk(text.includes(secret), `${control}: no ${secret} left in any column`)
    const one = await app.inject({ url: `/hl7/messages/${ids[control]}`, headers: bearer(tokens.admin) })
    t.same(
      ['text', 'encounter', 'error'].filter((key) => key in one.json()),
      [],
      `${control}: GET shows no text, encounter or reason`,
    )
  }
  t.match(
    (await app.inject({ url: `/hl7/messages/${ids.K2}`, headers: bearer(tokens.admin) })).json(),
    { controlId: 'K2', status: 'dismissed', parkCode: 'bed-occupied', facility: 'A', ackCode: 'AA' },
    'what exactly-once and the admin need stays',
  )
  t.match(logText(app, 'K4'), /PAT-SECRET/, 'the parked one keeps its text: a retry needs it')
  t.match((await app.inject({ url: `/hl7/messages/${ids.K4}`, headers: bearer(tokens.admin) })).json(), {
    status: 'parked',
    encounter: 'ENC-FOUR',
    error: /ENC-FOUR/,
    text: /^MSH/,
  })

  // A resend long after: the same answer code for the same control id, the ward unchanged.
  t.same(ackOf(await sender.send(sent.K1)), ackOf(acks.K1 as string), 'applied: the stored ACK')
  t.same(ackOf(await sender.send(sent.K2)), { code: 'AA', control: 'K2', text: 'parked', err: null })
  t.same(ackOf(await sender.send(sent.K3)), ackOf(acks.K3 as string), 'an AR keeps its text: it names no patient')
  t.equal(app.db.prepare('SELECT count(*) FROM ward_occupants').pluck().get(), 1)
  t.equal(app.db.prepare('SELECT count(*) FROM hl7_messages').pluck().get(), 4, 'the rows stay')

  await app.inject({ method: 'POST', url: `/hl7/messages/${ids.K4}/dismiss`, headers: bearer(tokens.admin) })
  t.equal(await pruneAt(app, 3), 1, 'resolved: its turn comes')
  t.notMatch(logText(app), /PAT-SECRET|ENC-|BED-SECRET/, 'nothing of the patient is left in the log')
  t.equal(await pruneAt(app, 30), 0, 'a pruned row is not pruned again')
})
