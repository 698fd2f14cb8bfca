import { test } from 'tap'
import { buildTestApp } from '../helper.js'
import { openSender } from './client.js'
import { adt } from './messages.js'

const DAY_MS = 86_400_000

test("the message text is cleared after HL7_KEEP_DAYS, a parked one's only once resolved; the rows stay", async (t) => {
  const { app } = await buildTestApp(t, { HL7_PORT: 0, HL7_KEEP_DAYS: 2 })
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  await sender.send(adt({ event: 'A01', control: 'K1', encounter: 'E1', bed: 'B1' }))
  await sender.send(adt({ event: 'A03', control: 'K2', encounter: 'UNKNOWN' }))
  const texts = () =>
    app.db.prepare('SELECT control_id, raw IS NOT NULL AS kept FROM hl7_messages ORDER BY control_id').all()
  // The scheduler's job as it runs each hour, at a time one day and then three days ahead.
  const pruneAt = (now: number) => app.writes.run(() => app.hl7.messages.pruneRaw(now - 2 * DAY_MS))
  t.equal(await pruneAt(Date.now() + DAY_MS), 0, 'within HL7_KEEP_DAYS: kept')
  t.equal(await pruneAt(Date.now() + 3 * DAY_MS), 1)
  t.same(texts(), [
    { control_id: 'K1', kept: 0 },
    { control_id: 'K2', kept: 1 },
  ])
  // A resend long after its text is gone still gets the stored ACK.
  const again = await sender.send(adt({ event: 'A01', control: 'K1', encounter: 'E1', bed: 'B1' }))
  t.match(again, /MSA\|AA\|K1\|applied/)
  t.equal(app.db.prepare('SELECT count(*) FROM ward_occupants').pluck().get(), 1)
})
