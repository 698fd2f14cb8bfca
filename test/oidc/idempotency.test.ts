import { createHash } from 'node:crypto'
import type { LightMyRequestResponse } from 'fastify'
import t, { type Test } from 'tap'
import { bearer, buildOidcApp, personToken, startTestProvider } from './setup.js'

// A provider account keeps its Idempotency-Keys across renewed tokens (its token id is the
// account). When the provider moves the person to another ward, a key used for the old ward must
// not replay the old ward's answer (a record of patients the person no longer sees) to a request
// made for the new one, and must not make a second change either.

const KEY = 'move-3f1c'
const admission = { encounter: 'enc-move', bed: 'B-1', occupiedBy: 'patient-move' }

const post = (token: string) => ({
  method: 'POST' as const,
  url: '/ward-occupants',
  headers: { ...bearer(token), 'idempotency-key': KEY },
  payload: admission,
})

/** A provider, a service that trusts it, and the count of ward occupants it holds. */
async function providerWard(t: Test) {
  const provider = await startTestProvider(t)
  const { app } = await buildOidcApp(t, provider)
  const count = app.db.prepare('SELECT count(*) FROM ward_occupants').pluck()
  return { provider, app, count }
}

/** The retry is refused as another request: 422, nothing of ward A's stored answer replayed. */
function refusedUnreplayed(t: Test, retry: LightMyRequestResponse, why: string) {
  t.equal(retry.statusCode, 422, why)
  t.equal(retry.json().code, 'IDEMPOTENCY_KEY_REUSED')
  t.notOk(retry.headers['idempotent-replayed'], 'nothing replayed')
  t.notMatch(retry.body, /enc-move|patient-move|"facility":"A"/, "nothing of ward A's answer")
}

t.test("a moved person's key does not replay the ward they left", async (t) => {
  const { provider, app, count } = await providerWard(t)

  const first = await app.inject(post(await personToken(provider, 'nia', ['ward-nurse'], 'A')))
  t.equal(first.statusCode, 200, first.body)
  t.equal(first.json().facility, 'A')

  const moved = await app.inject(post(await personToken(provider, 'nia', ['ward-nurse'], 'B')))
  refusedUnreplayed(t, moved, 'the key was used for a request made for another ward')
  t.equal(count.get(), 1, 'and nothing made in ward B')

  const back = await app.inject(post(await personToken(provider, 'nia', ['ward-nurse'], 'A')))
  t.equal(back.statusCode, 200, 'for ward A again, a renewed token replays as before')
  t.equal(back.headers['idempotent-replayed'], 'true')
  t.same(back.json(), first.json())
  t.equal(count.get(), 1)

  const unbound = await app.inject(post(await personToken(provider, 'nia', ['ward-nurse'], null)))
  t.equal(unbound.statusCode, 403, 'without a facility the provider token is refused before any key is read')
})

// A row stored before 0.10.4 tells neither the facility nor the role it was made for: it is refused
// to every request of the account (422: nothing replayed, nothing changed), never replayed to a
// person who may have moved since.
t.test('an answer a provider account stored before facilities were part of the key is refused', async (t) => {
  const { provider, app, count } = await providerWard(t)
  const first = await app.inject(post(await personToken(provider, 'pia', ['ward-nurse'], 'A')))
  t.equal(first.statusCode, 200, first.body)
  // The row as 0.10.3 stored it: the method, the path and the body's JSON with its keys sorted.
  const sorted = `{"bed":"B-1","encounter":"enc-move","occupiedBy":"patient-move"}`
  const before = createHash('sha256').update(`POST /ward-occupants\n${sorted}`).digest('base64url')
  const changed = app.db
    .prepare('UPDATE idempotency_keys SET fingerprint = ? WHERE token_id = ? AND key = ?')
    .run(before, 'oidc:pia', KEY).changes
  t.equal(changed, 1)
  for (const facility of ['B', 'A']) {
    const retry = await app.inject(post(await personToken(provider, 'pia', ['ward-nurse'], facility)))
    refusedUnreplayed(t, retry, `for ward ${facility}`)
  }
  t.equal(count.get(), 1, 'and nothing made again')
})
