import type { InjectOptions } from 'fastify'
import t from 'tap'
import { errorBody } from '../../plugins/errors.js'
import { FEATHERS_NAME_BY_STATUS } from '../clients/feathers-names.js'
import { bearer, buildTestApp } from '../helper.js'

t.test('every error status carries the @feathersjs/errors class name, and only those that have one', async (t) => {
  t.ok(FEATHERS_NAME_BY_STATUS.size >= 17, 'the oracle read the classes from the package')
  for (let status = 400; status < 600; status++) {
    const body = errorBody(status, 'm', 'C')
    t.equal(body.name, FEATHERS_NAME_BY_STATUS.get(status), `status ${status}`)
    if (!FEATHERS_NAME_BY_STATUS.has(status)) t.notOk('name' in body, `status ${status} has no name key`)
  }
})

t.test('answers keep the name through serialization, beside the contract fields', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const cases: [string, InjectOptions, number, string | undefined][] = [
    ['no token', { url: '/ward-occupants' }, 401, 'NotAuthenticated'],
    [
      'read token writes',
      { method: 'POST', url: '/ward-occupants', headers: bearer(tokens.read), payload: {} },
      403,
      'Forbidden',
    ],
    ['unknown id', { url: '/ward-occupants/aaaaaaaaaaaaaaaaaaaaaaaa', headers: bearer(tokens.read) }, 404, 'NotFound'],
    ['unknown route', { url: '/nowhere', headers: bearer(tokens.read) }, 404, 'NotFound'],
    ['bad query', { url: '/ward-occupants?nope=1', headers: bearer(tokens.read) }, 400, 'BadRequest'],
    [
      'text body',
      {
        method: 'POST',
        url: '/ward-occupants',
        headers: { ...bearer(tokens.write), 'content-type': 'text/plain' },
        payload: 'x',
      },
      415,
      undefined,
    ],
  ]
  for (const [what, request, status, name] of cases) {
    const res = await app.inject(request)
    t.equal(res.statusCode, status, what)
    const body = res.json()
    t.equal(body.name, name, `${what}: name`)
    t.equal(body.statusCode, status, `${what}: statusCode kept`)
    t.type(body.error, 'string', `${what}: error kept`)
    t.type(body.message, 'string', `${what}: message kept`)
  }
  const admit = { method: 'POST' as const, url: '/ward-occupants', headers: bearer(tokens.write) }
  const payload = { encounter: 'e', bed: 'B-1', occupiedBy: 'p' }
  t.equal((await app.inject({ ...admit, payload })).statusCode, 200)
  const conflict = await app.inject({ ...admit, payload })
  t.match(conflict.json(), { statusCode: 409, name: 'Conflict', code: 'BED_OCCUPIED', error: 'Conflict' })
})
