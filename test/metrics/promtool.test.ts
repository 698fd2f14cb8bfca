import { execFileSync } from 'node:child_process'
import { test } from 'tap'
import { listeningApp } from '../feed/helpers.js'
import { bearer } from '../helper.js'
import { ackOf, openSender } from '../hl7/client.js'
import { adt } from '../hl7/messages.js'
import { scrape } from './scrape.js'

// Debian's promtool (package prometheus, which .ci/run installs) reads a real scrape: names, units,
// HELP and TYPE lines as Prometheus expects them, its lint included. It runs in `npm run
// test:processes`, beside the test that starts a real Prometheus, not in `npm test`, which needs
// nothing outside the project.
test('a scrape after requests and ADT messages passes promtool check metrics', async (t) => {
  const { app } = await listeningApp(t, { METRICS_PORT: 0, HL7_PORT: 0 })
  const token = app.tokens.create({ account: 'admin-1', role: 'admin', facility: null, label: 'x' }).token
  const created = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(token),
    payload: { encounter: 'E1', bed: 'B1', occupiedBy: 'P1' },
  })
  t.equal(created.statusCode, 200)
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  t.equal(ackOf(await sender.send(adt({ event: 'A03', control: 'C-1', encounter: 'E-unknown' }))).code, 'AA')
  const { status, text } = await scrape(app.metrics?.port as number)
  t.equal(status, 200)
  t.match(text, /facility_service_adt_messages_total/, 'the scrape has the ADT counters')
  const checked = execFileSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' })
  t.equal(checked.trim(), '', 'promtool check metrics finds nothing to say')
})
