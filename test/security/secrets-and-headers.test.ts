import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import t from 'tap'
import { buildApp, loggerOptions } from '../../app.js'
import { defaultConfig } from '../../config.js'
import { createTokenRepository } from '../../db/repositories/tokens.js'
import { bearer } from '../helper.js'

t.test('no token is stored or logged in clear, even at trace level', async (t) => {
  const dir = t.testdir()
  const config = defaultConfig({ DATABASE_PATH: join(dir, 'secret.db'), LOG_LEVEL: 'trace', RATE_LIMIT_MAX: 0 })
  let log = ''
  const stream = new Writable({
    write(chunk, _encoding, done) {
      log += chunk
      done()
    },
  })
  const logger = { ...(loggerOptions(config) as object), stream }
  const app = await buildApp(config, { logger } as Parameters<typeof buildApp>[1])
  const { token } = createTokenRepository(app.db).create({ account: 'nurse', role: 'write' })
  const secret = token.split('_').slice(2).join('_')

  await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: bearer(token),
    payload: { encounter: 'e', bed: 'b', occupiedBy: 'p' },
  })
  await app.inject({ url: '/ward-occupants', headers: bearer(token) })
  await app.inject({ url: '/ward-occupants', headers: bearer(`${token}x`) })
  await app.inject({ url: '/ward-occupants', headers: { authorization: `Basic ${token}` } })
  await app.close()

  t.ok(log.length > 0, 'something was logged')
  t.notMatch(log, /"authorization":"(Bearer|Basic)/i, 'the header is never logged in clear')
  t.notOk(log.includes(secret), 'the log never holds a token secret')
  for (const file of readdirSync(dir)) {
    const bytes = readFileSync(join(dir, file))
    t.notOk(bytes.includes(secret), `${file} does not hold the secret`)
    t.notOk(bytes.includes(token), `${file} does not hold the token`)
  }
})

t.test('the API docs page works under its policy', async (t) => {
  const app = await buildApp(defaultConfig({ DATABASE_PATH: ':memory:', LOG_LEVEL: 'silent' }))
  t.teardown(() => app.close())
  for (const url of ['/docs/']) {
    const res = await app.inject(url)
    t.match(res.headers['content-security-policy'], /script-src 'self'/, `${url}: CSP`)
    t.equal(res.headers['x-content-type-options'], 'nosniff', `${url}: nosniff`)
    t.match(res.headers['content-security-policy'], /frame-ancestors 'none'/)
  }
  const page = (await app.inject('/docs/')).body
  const scripts = [...page.matchAll(/<script src="([^"]+)"/g)].map((m) => m[1] as string)
  t.ok(scripts.length > 0, 'the docs page loads scripts')
  t.notOk(/<script>[^<]/.test(page), 'and no inline script that the policy would block')
  for (const src of scripts) {
    const res = await app.inject(src.startsWith('/') ? src : `/docs/${src.replace(/^\.\//, '')}`)
    t.equal(res.statusCode, 200, `${src} is served from this origin`)
  }
})
