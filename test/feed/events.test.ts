import t from 'tap'
import { bearer } from '../helper.js'
import { firstMessage, json, listeningApp, openStream } from './helpers.js'

const admit = (bed: string, extra: Record<string, unknown> = {}) => ({
  encounter: `enc-${bed}`,
  bed,
  occupiedBy: `patient-${bed}`,
  ...extra,
})

t.test('every change arrives once, in commit order, with the record as GET shows it', async (t) => {
  const { app, tokens, base } = await listeningApp(t)
  const stream = await openStream(`${base}/events`, bearer(tokens.admin))
  t.teardown(() => stream.close())
  t.equal(stream.status, 200)
  t.match(stream.headers['content-type'], /^text\/event-stream/)
  t.equal(stream.headers['cache-control'], 'no-store')
  t.equal(stream.headers['x-content-type-options'], 'nosniff')
  t.equal((await firstMessage(stream)).event, 'ready', 'a new stream starts with ready')

  const auth = bearer(tokens.write)
  const created = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: auth,
    payload: admit('B-1', { facility: 'A' }),
  })
  const id = created.json().id as string
  const conflict = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: auth,
    payload: admit('B-1', { facility: 'A' }),
  })
  t.equal(conflict.statusCode, 409, 'a refused write ...')
  await app.inject({ method: 'PATCH', url: `/ward-occupants/${id}`, headers: auth, payload: { discharge: true } })
  const patched = await app.inject({ url: `/ward-occupants/${id}`, headers: auth })
  const removed = await app.inject({ method: 'DELETE', url: `/ward-occupants/${id}`, headers: auth })
  const template = await app.inject({
    method: 'POST',
    url: '/form-templates',
    headers: auth,
    payload: { type: 'vitals', name: 'Vitals' },
  })
  const templateId = template.json().id as string
  await app.inject({ method: 'PATCH', url: `/form-templates/${templateId}`, headers: auth, payload: { hide: true } })
  const hidden = await app.inject({ url: `/form-templates/${templateId}`, headers: auth })
  await app.inject({ method: 'DELETE', url: `/form-templates/${templateId}`, headers: auth })

  await stream.until((s) => s.changes().length >= 8, 10_000, 'eight changes')
  const changes = stream.changes()
  t.same(
    changes.map((e) => e.event),
    [
      'ward-occupants created',
      'notifications created',
      'ward-occupants patched',
      'notifications created',
      'ward-occupants removed',
      'form-templates created',
      'form-templates patched',
      'form-templates removed',
    ],
    '... produces no event; the others one each, in order',
  )
  // Whatever else was committed would be in the log by now: one more write shows nothing was between.
  await app.inject({ method: 'POST', url: '/form-templates', headers: auth, payload: { type: 'last' } })
  await stream.until((s) => s.changes().length >= 9)
  t.equal(stream.changes()[8]?.event, 'form-templates created', 'nothing else was sent')
  t.same(json(changes[0]?.data as string), created.json(), 'created: the record as POST answered it')
  t.same(json(changes[2]?.data as string), patched.json(), 'patched: the record as GET shows it')
  t.same(json(changes[4]?.data as string), removed.json(), 'removed: the record as it was')
  t.same(json(changes[5]?.data as string), template.json())
  t.same(json(changes[6]?.data as string), hidden.json())
  const ids = changes.map((e) => Number(e.id))
  t.ok(
    ids.every((n, i) => i === 0 || n > (ids[i - 1] as number)),
    'ids increase',
  )
  const notification = json(changes[1]?.data as string) as { id: string }
  const shown = await app.inject({ url: `/notifications/${notification.id}`, headers: bearer(tokens.admin) })
  t.same(notification, shown.json(), 'a produced notification as GET shows it to this caller')
})

t.test('?resources narrows the feed; bad parameters are 400s; non-SSE clients 406', async (t) => {
  const { app, tokens, base } = await listeningApp(t)
  const stream = await openStream(`${base}/events?resources=notifications`, bearer(tokens.admin))
  t.teardown(() => stream.close())
  await app.inject({ method: 'POST', url: '/ward-occupants', headers: bearer(tokens.write), payload: admit('B-2') })
  await stream.until((s) => s.changes().length >= 1)
  t.same(
    stream.changes().map((e) => e.event),
    ['notifications created'],
  )

  const cases: [string, Record<string, string>, number, string][] = [
    ['/events?resources=beds', {}, 400, 'UNKNOWN_RESOURCE'],
    ['/events?resources=', {}, 400, 'FST_ERR_VALIDATION'],
    ['/events?resources=notifications,', {}, 400, 'FST_ERR_VALIDATION'],
    ['/events?lastEventId=abc', {}, 400, 'FST_ERR_VALIDATION'],
    ['/events?lastEventId=-1', {}, 400, 'FST_ERR_VALIDATION'],
    ['/events', { 'last-event-id': '12x' }, 400, 'INVALID_LAST_EVENT_ID'],
    ['/events', { 'last-event-id': '99999999999999999' }, 400, 'INVALID_LAST_EVENT_ID'],
    ['/events?access_token=x', {}, 400, 'FST_ERR_VALIDATION'],
    ['/events?since=1', {}, 400, 'FST_ERR_VALIDATION'],
  ]
  for (const [url, headers, status, code] of cases) {
    const res = await openStream(`${base}${url}`, { ...bearer(tokens.read), ...headers })
    t.equal(res.status, status, url)
    t.equal(JSON.parse(res.body).code, code, `${url} ${JSON.stringify(headers)}`)
  }
  const json406 = await openStream(`${base}/events`, { ...bearer(tokens.read), accept: 'application/json' })
  t.equal(json406.status, 406, 'a client that does not accept an event stream')
})

t.test('no stream without a valid token, and never a token in the URL', async (t) => {
  const { app, tokens, base } = await listeningApp(t)
  const none = await openStream(`${base}/events`)
  t.equal(none.status, 401)
  t.match(none.headers['www-authenticate'], /^Bearer/)
  const bad = await openStream(`${base}/events`, bearer(`${tokens.read}x`))
  t.equal(bad.status, 401)
  const inUrl = await openStream(`${base}/events?ticket=${encodeURIComponent(tokens.read)}`)
  t.equal(inUrl.status, 401, 'a token given as a ticket is not a ticket')
  const revoked = app.tokens.create({ account: 'gone', role: 'read' })
  app.tokens.revoke(revoked.info.tokenId)
  t.equal((await openStream(`${base}/events`, bearer(revoked.token))).status, 401)
})

t.test('idle streams get heartbeats', async (t) => {
  const { tokens, base } = await listeningApp(t, { FEED_HEARTBEAT_MS: 100 })
  const stream = await openStream(`${base}/events`, bearer(tokens.read))
  t.teardown(() => stream.close())
  await stream.until((s) => s.comments >= 2, 10_000, 'two heartbeats')
  t.pass('comment lines keep the connection visibly alive')
})
