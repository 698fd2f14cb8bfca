import { test } from 'tap'
import { listeningApp, openStream, waitUntil } from '../feed/helpers.js'
import { bearer } from '../helper.js'
import { ackOf, openSender } from '../hl7/client.js'
import { adt } from '../hl7/messages.js'
import { sample, scrape } from './scrape.js'

// Strings no metric has any business carrying: a patient, an encounter, a bed, a room, a doctor,
// an account, a facility, a token. Each is distinctive, so a find in the scraped text is a leak.
const PATIENT = 'Zyxwine-Patient-77'
const ENCOUNTER = 'ENC-Qwertz-4411'
const BED = 'Bed-Plumtree-9'
const ROOM = 'Room-Hollyhock-3'
const PROVIDER = 'dr-Marzipan-55'
const ACCOUNT = 'nurse-Oleander-12'
const FACILITY = 'Ward-Juniper'
const SECRETS = [PATIENT, ENCOUNTER, BED, ROOM, PROVIDER, ACCOUNT, FACILITY]

test('after a ward day with patient-looking data, the scrape names none of it', async (t) => {
  const { app, base } = await listeningApp(t, { METRICS_PORT: 0, HL7_PORT: 0 })
  const token = app.tokens.create({ account: ACCOUNT, role: 'admin', facility: FACILITY, label: 'x' }).token
  const auth = bearer(token)
  const stream = await openStream(`${base}/events`, auth)
  t.teardown(() => stream.close())
  const created = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: auth,
    payload: { encounter: ENCOUNTER, bed: BED, room: ROOM, occupiedBy: PATIENT, provider: PROVIDER },
  })
  t.equal(created.statusCode, 200)
  const id = created.json().id as string
  await app.inject({ url: `/ward-occupants/${id}`, headers: auth })
  await app.inject({ url: `/ward-occupants?encounter=${ENCOUNTER}&bed=${BED}`, headers: auth })
  await app.inject({ url: `/beds?facility=${FACILITY}`, headers: auth })
  await app.inject({ url: `/${PATIENT}/${BED}`, headers: auth })
  await app.inject({ url: '/beds', headers: bearer(`fs_${PATIENT}`) })
  await waitUntil(() => stream.events.some((e) => e.event !== 'ready'), 'the change on the stream')

  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  const fields = { encounter: `${ENCOUNTER}-2`, patient: PATIENT, bed: BED, room: ROOM, facility: FACILITY }
  t.equal(ackOf(await sender.send(adt({ event: 'A01', control: 'C1', provider: PROVIDER, ...fields }))).code, 'AA')
  t.match(ackOf(await sender.send(adt({ event: 'A03', control: 'C2', ...fields, encounter: PATIENT }))).text, /^parked/)
  await sender.send(adt({ event: PATIENT.slice(0, 20), control: 'C3', ...fields }))
  await sender.send(adt({ event: 'A01', control: 'C4', ...fields, type: `ADT^${BED}` }))

  const { status, text } = await scrape(app.metrics?.port as number)
  t.equal(status, 200)
  for (const secret of [...SECRETS, id, token, token.slice(0, 12)]) t.notOk(text.includes(secret), `no ${secret}`)
  t.ok(text.includes('route="unmatched"'), 'the unmatched request counted, under its fixed label')
  t.equal(sample(text, 'facility_service_feed_streams_open'), 1)
  t.ok((sample(text, 'facility_service_feed_events_delivered_total') ?? 0) >= 1, 'events delivered')
  t.equal(sample(text, 'facility_service_http_requests_in_flight'), 1, 'the open stream is in flight')
  t.ok((sample(text, 'facility_service_database_size_bytes') ?? 0) > 0, 'the database file')
  t.ok(sample(text, 'facility_service_wal_size_bytes') !== undefined, 'the WAL')
  t.ok((sample(text, 'facility_service_disk_free_bytes') ?? 0) > 0, 'free disk')
  // The A01 finds its bed taken by the API's occupant; the A03 names no encounter of the ward.
  t.equal(sample(text, 'facility_service_adt_messages_parked'), 2)
  t.equal(
    sample(text, 'facility_service_adt_messages_total{event="other",outcome="ignored"}'),
    2,
    'both made-up triggers',
  )
})
