import { join } from 'node:path'
import { test } from 'tap'
import { waitUntil } from '../feed/helpers.js'
import { bearer, buildTestApp } from '../helper.js'
import { ackOf, openSender } from '../hl7/client.js'
import { adt } from '../hl7/messages.js'
import { sample, scrape } from './scrape.js'

test('off by default: no listener, nothing kept, /metrics not on the API port', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  t.equal(app.metrics, null)
  for (const headers of [{}, bearer(tokens.admin)]) {
    const res = await app.inject({ url: '/metrics', headers })
    t.equal(res.statusCode, 404)
    t.notMatch(res.body, /facility_service_/)
  }
})

test('with METRICS_PORT: the metrics listener answers, the API port still does not', async (t) => {
  const { app, tokens } = await buildTestApp(t, { METRICS_PORT: 0 })
  const port = app.metrics?.port as number
  t.ok(port > 0, 'listening')
  const anonymous = await app.inject({ url: '/metrics' })
  t.equal(anonymous.statusCode, 404, 'an anonymous caller on the API port gets nothing')
  t.notMatch(anonymous.body, /facility_service_/)
  const admin = await app.inject({ url: '/metrics', headers: bearer(tokens.admin) })
  t.equal(admin.statusCode, 404, 'nor does an admin')
  const res = await scrape(port)
  t.equal(res.status, 200)
  t.match(res.headers['content-type'], /^text\/plain; version=0\.0\.4/)
  t.match(res.text, /^# HELP facility_service_http_requests_total /m)
  t.match(res.text, /^process_cpu_seconds_total /m, 'process metrics')
  t.equal((await scrape(port, {}, '/')).status, 404, 'only /metrics')
  t.equal((await scrape(port, {}, '/metrics/../health')).status, 404)
})

test('METRICS_TOKEN: a scraper without it or with another gets 401', async (t) => {
  const token = 'm'.repeat(40)
  const { app } = await buildTestApp(t, { METRICS_PORT: 0, METRICS_TOKEN: token })
  const port = app.metrics?.port as number
  const none = await scrape(port)
  t.equal(none.status, 401)
  t.equal(none.headers['www-authenticate'], 'Bearer realm="metrics"')
  t.notMatch(none.text, /facility_service_/)
  t.equal((await scrape(port, bearer(`${token}x`))).status, 401)
  t.equal((await scrape(port, bearer('m'.repeat(39)))).status, 401)
  const ok = await scrape(port, bearer(token))
  t.equal(ok.status, 200)
  t.match(ok.text, /facility_service_info\{version="/)
})

test('requests by route pattern, never the URL; unmatched under one label; failures by reason', async (t) => {
  const { app, tokens } = await buildTestApp(t, { METRICS_PORT: 0 })
  const created = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(tokens.write),
    payload: { encounter: 'ENC-1', bed: 'B1', occupiedBy: 'patient-1', facility: 'A' },
  })
  t.equal(created.statusCode, 200)
  const id = created.json().id as string
  await app.inject({ url: `/ward-occupants/${id}`, headers: bearer(tokens.read) })
  await app.inject({ url: '/ward-occupants/no-such-id', headers: bearer(tokens.read) })
  await app.inject({ url: '/no/such/path/patient-1' })
  await app.inject({ url: '/beds' })
  await app.inject({ url: '/beds', headers: bearer('fs_nothing_like_a_token') })
  const { text } = await scrape(app.metrics?.port as number)
  t.equal(
    sample(text, 'facility_service_http_requests_total{route="/ward-occupants/:id",method="GET",status_code="200"}'),
    1,
  )
  t.equal(
    sample(text, 'facility_service_http_requests_total{route="/ward-occupants/:id",method="GET",status_code="404"}'),
    1,
  )
  t.equal(
    sample(text, 'facility_service_http_requests_total{route="/ward-occupants",method="POST",status_code="200"}'),
    1,
  )
  t.equal(sample(text, 'facility_service_http_requests_total{route="unmatched",method="GET",status_code="404"}'), 1)
  t.equal(sample(text, 'facility_service_http_request_duration_seconds_count{route="/ward-occupants/:id"}'), 2)
  t.equal(
    sample(text, 'facility_service_http_request_duration_seconds_bucket{le="+Inf",route="/ward-occupants/:id"}'),
    2,
  )
  t.equal(sample(text, 'facility_service_http_request_duration_seconds_bucket{le="10",route="/ward-occupants/:id"}'), 2)
  t.notMatch(text, id, 'no record id')
  t.notMatch(text, /no-such-id|no\/such\/path|patient-1/)
  t.equal(sample(text, 'facility_service_auth_failures_total{reason="missing"}'), 1)
  t.equal(sample(text, 'facility_service_auth_failures_total{reason="malformed"}'), 1)
  t.equal(
    sample(text, 'facility_service_auth_failures_total{reason="expired"}'),
    0,
    'every reason shown from the start',
  )
  t.ok((sample(text, 'facility_service_write_batch_writes_count') ?? 0) >= 1, 'the write queue: batches')
  t.ok((sample(text, 'facility_service_write_commit_duration_seconds_count') ?? 0) >= 1, 'commit latency')
  t.equal(sample(text, 'facility_service_write_queue_depth'), 0)
  t.equal(sample(text, 'facility_service_http_requests_in_flight'), 0, 'every request answered')
})

test('ADT messages by event and outcome, parked now, the ACK latency; an unknown trigger is "other"', async (t) => {
  const { app } = await buildTestApp(t, { METRICS_PORT: 0, HL7_PORT: 0 })
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  const send = async (fields: Parameters<typeof adt>[0]) => ackOf(await sender.send(adt(fields)))
  t.equal((await send({ event: 'A01', control: 'M1', encounter: 'E1', bed: 'B1', facility: 'A' })).code, 'AA')
  t.match((await send({ event: 'A03', control: 'M2', encounter: 'NOT-HERE', facility: 'A' })).text, /^parked/)
  t.equal((await send({ event: 'A31', control: 'M3', encounter: 'E1', facility: 'A' })).code, 'AA')
  t.equal((await send({ event: 'Z99-Jane-Doe', control: 'M4', encounter: 'E1', facility: 'A' })).code, 'AA')
  t.equal((await send({ event: 'A01', control: 'M5', encounter: 'E9', facility: 'A', type: 'ORU^R01' })).code, 'AR')
  const { text } = await scrape(app.metrics?.port as number)
  t.equal(sample(text, 'facility_service_adt_messages_total{event="A01",outcome="applied"}'), 1)
  t.equal(sample(text, 'facility_service_adt_messages_total{event="A03",outcome="parked"}'), 1)
  t.equal(sample(text, 'facility_service_adt_messages_total{event="A31",outcome="ignored"}'), 1)
  t.equal(sample(text, 'facility_service_adt_messages_total{event="other",outcome="ignored"}'), 1)
  t.equal(sample(text, 'facility_service_adt_messages_total{event="R01",outcome="rejected"}'), undefined)
  t.notMatch(text, /Z99|Jane|NOT-HERE/)
  t.equal(sample(text, 'facility_service_adt_messages_parked'), 1)
  t.equal(sample(text, 'facility_service_adt_ack_duration_seconds_count'), 5)
  t.equal(sample(text, 'facility_service_adt_connections_open'), 1)
  t.equal(sample(text, 'facility_service_adt_listener_up'), 1)
})

test('scheduled backups: their age beside their interval, and whether the last one succeeded', async (t) => {
  const dir = t.testdir({ backups: {} })
  const { app } = await buildTestApp(t, {
    METRICS_PORT: 0,
    DATABASE_PATH: join(dir, 'ward.db'),
    BACKUP_DIR: join(dir, 'backups'),
    BACKUP_INTERVAL_MINUTES: 30,
  })
  await waitUntil(() => app.backups.status()?.last !== null, 'the first backup')
  const { text } = await scrape(app.metrics?.port as number)
  t.equal(sample(text, 'facility_service_backup_interval_seconds'), 1800)
  const age = sample(text, 'facility_service_backup_age_seconds') as number
  t.ok(age >= 0 && age < 1800, `a fresh backup (${age} s)`)
  t.equal(sample(text, 'facility_service_backup_last_success'), 1)
  t.equal(sample(text, 'facility_service_replication_lag_seconds'), undefined, 'no replica, no replication metrics')
})
