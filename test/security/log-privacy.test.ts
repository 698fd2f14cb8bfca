import t from 'tap'
import { bearer } from '../helper.js'
import { appWithLog } from './app-with-log.js'

// Filters, bodies and stray paths name patients, encounters and beds; the request log must not
// carry them at any level, unless LOG_QUERY_VALUES asks for the full URL (query values only).

const PATIENT = 'patient-7x7q'
const ENCOUNTER = 'enc-1001z'
const BED = 'bed-9k9'
const IDENTIFIERS = [PATIENT, ENCOUNTER, BED]

/** Requests that carry the identifiers every way a client can: query, body, path, bad input. */
async function identifyingTraffic(app: Awaited<ReturnType<typeof appWithLog>>['app']) {
  const token = app.tokens.create({ account: 'nurse', role: 'write' }).token
  const admit = { encounter: ENCOUNTER, bed: BED, occupiedBy: PATIENT }
  const created = await app.inject({ method: 'POST', url: '/ward-occupants', headers: bearer(token), payload: admit })
  const id = created.json().id as string
  const requests = [
    { url: `/ward-occupants?occupiedBy=${PATIENT}&encounter=${ENCOUNTER}&bed[$in][]=${BED}` },
    { url: `/ward-occupants/${id}?bed=${BED}` },
    { url: `/ward-occupants/${PATIENT}` },
    { url: `/patients/${PATIENT}/${ENCOUNTER}` },
    { url: `/ward-occupants?occupiedBy[$nope]=${PATIENT}` },
    { url: `/ward-occupants?${PATIENT}=${BED}` },
    { url: `/ward-occupants?%ZZ${ENCOUNTER}=1` },
    { method: 'POST' as const, url: '/ward-occupants', payload: admit },
    { method: 'POST' as const, url: '/ward-occupants', payload: { ...admit, ocupiedBy: PATIENT } },
    {
      method: 'POST' as const,
      url: '/ward-occupants',
      payload: `{"occupiedBy":"${PATIENT}",`,
      headers: { 'content-type': 'application/json' },
    },
    { method: 'PATCH' as const, url: `/ward-occupants/${id}`, payload: { provider: PATIENT } },
    { method: 'POST' as const, url: '/form-templates', payload: { type: BED, name: PATIENT } },
  ]
  for (const r of requests) {
    const res = await app.inject({ method: 'GET', ...r, headers: { ...bearer(token), ...r.headers } })
    if (res.statusCode >= 500) throw new Error(`${r.url}: ${res.body}`)
  }
  const unauthenticated = await app.inject({ url: `/ward-occupants?occupiedBy=${PATIENT}` })
  if (unauthenticated.statusCode !== 401) throw new Error('expected 401')
  return id
}

for (const level of ['info', 'debug', 'trace'] as const) {
  t.test(`at ${level}, no query value, body or stray path reaches the log`, async (t) => {
    const { app, log } = await appWithLog(t, { LOG_LEVEL: level })
    const id = await identifyingTraffic(app)
    const text = log()
    t.ok(text.split('\n').length > 20, 'requests were logged')
    for (const value of IDENTIFIERS) t.notOk(text.includes(value), `${value} is not in the log`)
    // Still useful: the route pattern, the record id, the parameter names and the request id.
    t.match(text, /"route":"\/ward-occupants\/:id","params":\{"id":"[0-9a-f]{24}"\}/)
    t.ok(text.includes(id), 'the record id is logged')
    t.match(text, /"query":\["occupiedBy","encounter","bed\[\$in\]\[\]"\]/, 'the parameter names are logged')
    t.match(text, /"reqId":"req-\d+"/)
    t.match(text, /"route":null,"path":"\/patients\/\*"/, 'an unmatched path keeps its first segment only')
  })
}

t.test('LOG_QUERY_VALUES=true logs full URLs (query values), still no bodies and no tickets', async (t) => {
  const { app, log } = await appWithLog(t, { LOG_LEVEL: 'debug', LOG_QUERY_VALUES: true })
  await identifyingTraffic(app)
  const token = app.tokens.create({ account: 'viewer', role: 'read' }).token
  const ticket = (await app.inject({ method: 'POST', url: '/events/tickets', headers: bearer(token) })).json().ticket
  t.type(ticket, 'string')
  // Any route's URL may carry one (only the stream accepts it, but the URL is logged all the same),
  // spelled any way the query-string parser reads as the parameter `ticket`.
  t.equal((await app.inject({ url: `/ward-occupants?ticket=${ticket}` })).statusCode, 401)
  const spellings = ['%74icket', 'tick%65t', 'ticket[]', 'ticket%5B%5D', 'ticket[0]', '%74%69%63%6b%65%74']
  for (const name of spellings) {
    for (const path of ['/events', '/ward-occupants']) {
      const res = await app.inject({
        url: `${path}?resources=x&${name}=${ticket}`,
        headers: { accept: 'text/event-stream' },
      })
      t.ok(res.statusCode >= 400, `${path}?${name}=…: ${res.statusCode}`)
    }
  }
  const text = log()
  t.ok(text.includes(`occupiedBy=${PATIENT}`), 'the query values are there, as documented')
  t.notOk(text.includes(ticket), 'a stream ticket is never logged')
  t.notOk(text.includes(`"occupiedBy":"${PATIENT}"`), 'bodies are still not logged')
})

// Secrets of every shape, named by their key: short values no shape rule could catch (`hunter2`),
// each its own so that a failure names the case.
const SECRET_NAMED_URLS: Record<string, string> = {
  token: '/ward-occupants?token=hunter2a',
  password: '/ward-occupants?password=hunter2b',
  api_key: '/ward-occupants?api_key=hunter2c',
  access_token: '/ward-occupants?access_token=hunter2d',
  ticket: '/events?resources=ward-occupants&ticket=hunter2e',
  secret: '/ward-occupants?client_secret=hunter2f',
  authorization: '/ward-occupants?Authorization=Bearer%20hunter2g',
  'X-Api-Key': '/ward-occupants?X-Api-Key=hunter2h',
  pwd: '/ward-occupants?pwd=hunter2i',
  'OAuth code': '/ward-occupants?code=hunter2j&state=s',
  'a pair inside a value': '/ward-occupants?a=1;password=hunter2k',
  'a URL inside a value': '/ward-occupants?next=%2Fx%3Fpassword%3Dhunter2l',
  "a URL's user information": '/ward-occupants?redirect=https%3A%2F%2Fuser%3Ahunter2m%40host%2F',
  'an encoded pair': '/ward-occupants?a=password%3Dhunter2n',
  'a path parameter of a route': '/ward-occupants/password=hunter2o',
  'a stray path': '/ward-occupants;password=hunter2p',
  'a stray first segment': '/token=hunter2q/x',
  'the path of a known route': '/health;session=hunter2r',
  passcode: '/ward-occupants?passcode=hunter2w',
  auth_code: '/ward-occupants?auth_code=hunter2x',
  'PKCE code_verifier': '/ward-occupants?code_verifier=hunter2y',
  client_assertion: '/ward-occupants?client_assertion=hunter2z',
}

for (const withQueryValues of [false, true]) {
  t.test(
    `values of parameters named as secrets never reach the log (LOG_QUERY_VALUES=${withQueryValues})`,
    async (t) => {
      const { app, log } = await appWithLog(t, { LOG_LEVEL: 'trace', LOG_QUERY_VALUES: withQueryValues })
      const token = app.tokens.create({ account: 'nurse', role: 'read' }).token
      for (const url of Object.values(SECRET_NAMED_URLS)) {
        await app.inject({ url })
        await app.inject({ url, headers: bearer(token) })
      }
      await app.inject({
        url: '/ward-occupants',
        headers: {
          authorization: 'Bearer hunter2s',
          'proxy-authorization': 'Basic hunter2t',
          'x-api-key': 'hunter2u',
          cookie: 'session=hunter2v',
        },
      })
      const text = log()
      t.ok(text.includes('"msg":"incoming request"'), 'requests were logged')
      for (const [label, url] of Object.entries(SECRET_NAMED_URLS)) {
        const secret = /hunter2[a-z]/.exec(url)?.[0] as string
        t.notOk(text.includes(secret), `${label}: ${url} leaves no secret in the log`)
      }
      t.notOk(/hunter2[s-v]/.test(text), 'nor do secret headers')
      if (withQueryValues) {
        t.ok(text.includes('"url":"/ward-occupants?password=[redacted]"'), 'the redacted value is marked')
        t.ok(text.includes('state=s'), 'a parameter not named as a secret keeps its value')
      }
    },
  )
}
