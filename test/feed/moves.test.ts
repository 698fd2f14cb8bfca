import t from 'tap'
import { createNotificationRepository } from '../../db/repositories/notifications.js'
import { bearer, type TestApp } from '../helper.js'
import { listeningApp, openStream, type RawStream } from './helpers.js'

// A form template can be patched to another facility (the one record that can move today; ward
// occupants and notifications never change facility). Each viewer is told what it can read of the
// move: the old facility sees the record leave as it last could read it, the new one sees it
// arrive, a viewer without a facility sees a patch. Streams open before the moves and streams
// resumed from before them (catch-ups from the log) must tell the same story.

const URL = '/events?resources=form-templates,notifications'

/** A notification for everyone: once a stream has it, it has everything committed before it. */
function sentinel(app: TestApp): string {
  const repo = createNotificationRepository(app.db)
  return repo.create({ code: 'end', type: 'test', title: 'end', body: 'end', facility: null }).id
}

async function untilSentinel(stream: RawStream, id: string) {
  await stream.until((s) => s.changes().some((e) => JSON.parse(e.data).id === id), 10_000, 'the sentinel')
}

const story = (stream: RawStream) =>
  stream
    .changes()
    .filter((e) => e.event.startsWith('form-templates'))
    .map((e) => {
      const data = JSON.parse(e.data) as { name?: string; facility?: string }
      return [e.event, data.facility ?? null, data.name ?? null]
    })

t.test('a template moved between facilities: removed for the old, created for the new, patched for all', async (t) => {
  const { app, tokens, base } = await listeningApp(t)
  const readB = app.tokens.create({ account: 'viewer-b', role: 'read', facility: 'B' }).token
  const start = String(app.feed.log.head())
  const live = {
    A: await openStream(`${base}${URL}`, bearer(tokens.readA)),
    B: await openStream(`${base}${URL}`, bearer(readB)),
    all: await openStream(`${base}${URL}`, bearer(tokens.read)),
  }
  t.teardown(() => {
    for (const s of Object.values(live)) s.close()
  })
  const write = bearer(tokens.write)
  const made = await app.inject({
    method: 'POST',
    url: '/form-templates',
    headers: write,
    payload: { type: 'intake', name: 'in A', facility: 'A' },
  })
  const id = made.json().id as string
  const patch = (payload: object) =>
    app.inject({ method: 'PATCH', url: `/form-templates/${id}`, headers: write, payload })
  t.equal((await patch({ name: 'moving', facility: 'B' })).statusCode, 200, 'moved A to B, renamed on the way')
  t.equal((await patch({ name: 'in B' })).statusCode, 200)
  t.equal((await patch({ name: 'home', facility: 'A' })).statusCode, 200, 'and back')
  const end = sentinel(app)
  for (const s of Object.values(live)) await untilSentinel(s, end)

  const expected = {
    A: [
      ['form-templates created', 'A', 'in A'],
      ['form-templates removed', 'A', 'in A'],
      ['form-templates created', 'A', 'home'],
    ],
    B: [
      ['form-templates created', 'B', 'moving'],
      ['form-templates patched', 'B', 'in B'],
      ['form-templates removed', 'B', 'in B'],
    ],
    all: [
      ['form-templates created', 'A', 'in A'],
      ['form-templates patched', 'B', 'moving'],
      ['form-templates patched', 'B', 'in B'],
      ['form-templates patched', 'A', 'home'],
    ],
  }
  const tokenOf = { A: tokens.readA, B: readB, all: tokens.read }
  for (const side of ['A', 'B', 'all'] as const) {
    t.same(story(live[side]), expected[side], `live, ${side}`)
    const resumed = await openStream(`${base}${URL}`, { ...bearer(tokenOf[side]), 'last-event-id': start })
    t.teardown(() => resumed.close())
    await untilSentinel(resumed, end)
    t.same(story(resumed), expected[side], `caught up from before the moves, ${side}`)
    const ids = resumed.changes().map((e) => Number(e.id))
    t.same(
      ids,
      live[side].changes().map((e) => Number(e.id)),
      `${side}: the same ids live and caught up`,
    )
  }
})

t.test('a template given a facility by a token without one arrives in that facility', async (t) => {
  const { app, tokens, base } = await listeningApp(t)
  const stream = await openStream(`${base}${URL}`, bearer(tokens.readA))
  t.teardown(() => stream.close())
  const write = bearer(tokens.write)
  const made = await app.inject({ method: 'POST', url: '/form-templates', headers: write, payload: { type: 'x' } })
  const id = made.json().id as string
  await app.inject({ method: 'PATCH', url: `/form-templates/${id}`, headers: write, payload: { facility: 'A' } })
  await untilSentinel(stream, sentinel(app))
  t.same(story(stream), [['form-templates created', 'A', null]], 'nothing of its time without a facility')
})
