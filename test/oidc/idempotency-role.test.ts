import t from 'tap'
import { bearer, buildOidcApp, personToken, startTestProvider } from './setup.js'

// A provider account keeps its Idempotency-Keys across renewed tokens, and the provider may change
// the person's role as well as their facility. Marking a notification seen is open to a read token,
// and its answer shows an admin the notification's addressees (`to`, admin-only): a key an admin
// used must not replay that answer to the same person once their token says they are no admin.

const KEY = 'seen-7a2e'

t.test("a key used as admin does not replay the admin's view to the person made a viewer", async (t) => {
  const provider = await startTestProvider(t)
  const { app } = await buildOidcApp(t, provider)
  const note = app.repos.notifications.create({
    code: 'c',
    type: 't',
    title: 'for the ward',
    body: 'b',
    to: ['oidc:ada', 'oidc:someone-else'],
    facility: 'A',
  })
  const seen = (token: string) =>
    app.inject({
      method: 'POST',
      url: `/notifications/${note.id}/seen`,
      headers: { ...bearer(token), 'idempotency-key': KEY },
    })

  const asAdmin = await seen(await personToken(provider, 'ada', ['ward-admin'], 'A'))
  t.equal(asAdmin.statusCode, 200, asAdmin.body)
  t.same(asAdmin.json().to, ['oidc:ada', 'oidc:someone-else'], 'an admin sees the addressees')

  const viewer = await personToken(provider, 'ada', ['ward-viewer'], 'A')
  const read = await app.inject({ url: `/notifications/${note.id}`, headers: bearer(viewer) })
  t.equal(read.statusCode, 200)
  t.notOk('to' in read.json(), 'a viewer reading it does not see them')

  const replayed = await seen(viewer)
  t.notOk(replayed.headers['idempotent-replayed'], "the admin's answer is not replayed to a viewer")
  t.notMatch(replayed.body, /someone-else/, 'nor anything of the addressees')
  t.equal(replayed.statusCode, 422, 'the key was used for a request made with another role')
})
