import type { AddressInfo } from 'node:net'
import {
  BadRequest,
  Conflict,
  FeathersError,
  Forbidden,
  GeneralError,
  NotAuthenticated,
  NotFound,
  TooManyRequests,
} from '@feathersjs/errors'
import { feathers } from '@feathersjs/feathers'
import restModule from '@feathersjs/rest-client'
import t from 'tap'
import type { WardOccupant } from '../../schemas/ward-occupants.js'
import { buildTestApp, type TestApp } from '../helper.js'

// A CommonJS module whose module.exports is the function itself (its types only know `.default`).
const rest = restModule.default

type Occupants = { wardOccupants: Partial<WardOccupant>[]; total: number }

async function listening(app: TestApp): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' })
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
}

/** The origin platform's own client: @feathersjs/rest-client over fetch, queries encoded by qs. */
function feathersClient(base: string, token: string) {
  const client = feathers()
  client.configure(rest(base).fetch(fetch))
  client.hooks({
    before: {
      all: [
        async (context) => {
          context.params.headers = { ...context.params.headers, authorization: `Bearer ${token}` }
        },
      ],
    },
  })
  return client
}

t.test('a Feathers REST client finds, gets, creates, patches and removes without workarounds', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const occupants = feathersClient(await listening(app), tokens.write).service('ward-occupants')
  const rows = [
    { bed: 'B-1', room: 'R-1', encounter: 'e1', occupiedBy: 'p1', createdAt: 1000 },
    { bed: 'B-2', room: 'R-1', encounter: 'e2', occupiedBy: 'p2', createdAt: 2000 },
    { bed: 'B-3', room: 'R-2', encounter: 'e3', occupiedBy: 'p3', createdAt: 3000 },
  ]
  const created: WardOccupant[] = []
  for (const row of rows) created.push(await occupants.create(row))
  t.match(created[0], { bed: 'B-1', createdBy: 'nurse-all' })
  const [first, second, third] = created as [WardOccupant, WardOccupant, WardOccupant]

  const discharged = await occupants.patch(second.id, { discharge: true })
  t.type(discharged.dischargedAt, 'number', 'patch discharges')
  t.equal((await occupants.get(second.id)).dischargedAt, discharged.dischargedAt, 'get')

  const beds = (page: Occupants) => page.wardOccupants.map((r) => r.bed)
  // Independent oracle: the rows this test wrote, filtered here.
  const active = created.filter((r) => r.id !== second.id).map((r) => r.bed)
  t.same(beds(await occupants.find({ query: { dischargedAt: null } })), active, 'null: the active beds')
  t.same(beds(await occupants.find({ query: { dischargedAt: { $ne: null } } })), ['B-2'], '$ne null')
  t.same(beds(await occupants.find({ query: { bed: { $in: ['B-1', 'B-3'] } } })), ['B-1', 'B-3'], '$in')
  t.same(beds(await occupants.find({ query: { $or: [{ bed: 'B-3' }, { room: 'R-1', dischargedAt: null }] } })), [
    'B-1',
    'B-3',
  ])
  t.same(beds(await occupants.find({ query: { $sort: { createdAt: -1 } } })), ['B-3', 'B-2', 'B-1'], '$sort')
  const selected = (await occupants.find({ query: { $select: ['bed'], $limit: 1 } })) as Occupants
  t.same(selected.wardOccupants, [{ id: first.id, bed: 'B-1' }], '$select (the id always comes) and $limit')
  t.equal(selected.total, 3)

  t.same(await occupants.remove(third.id), third, 'remove returns the record')
  t.same(beds(await occupants.find({})), ['B-1', 'B-2'])
})

t.test('each error status arrives as its Feathers class', async (t) => {
  const { app, tokens } = await buildTestApp(t, { RATE_LIMIT_MAX: 1000 })
  const base = await listening(app)
  const occupants = feathersClient(base, tokens.write).service('ward-occupants')
  const unknownId = 'aaaaaaaaaaaaaaaaaaaaaaaa'
  const cases: [string, () => Promise<unknown>, new (...args: never[]) => Error, number, string][] = [
    ['bad query', () => occupants.find({ query: { nope: 1 } }), BadRequest, 400, 'INVALID_QUERY'],
    ['bad body', () => occupants.create({ bed: 'B-9' }), BadRequest, 400, 'FST_ERR_VALIDATION'],
    [
      'no token',
      () => feathersClient(base, 'not-a-token').service('ward-occupants').find(),
      NotAuthenticated,
      401,
      'TOKEN_REJECTED',
    ],
    [
      'read token writes',
      () => feathersClient(base, tokens.read).service('ward-occupants').create({}),
      Forbidden,
      403,
      'ROLE_FORBIDDEN',
    ],
    ['unknown id', () => occupants.get(unknownId), NotFound, 404, 'NOT_FOUND'],
    [
      'occupied bed',
      () => occupants.create({ bed: 'B-1', encounter: 'e', occupiedBy: 'p' }),
      Conflict,
      409,
      'BED_OCCUPIED',
    ],
  ]
  const admitted = (await occupants.create({ bed: 'B-1', encounter: 'e', occupiedBy: 'p' })) as WardOccupant
  for (const [what, call, ErrorClass, status, code] of cases) {
    const error = await call().then(
      () => null,
      (e: Error & { code?: unknown; statusCode?: number }) => e,
    )
    t.ok(error instanceof ErrorClass, `${what}: instanceof ${ErrorClass.name} (got ${error?.constructor.name})`)
    t.equal(error?.statusCode, status, `${what}: statusCode`)
    t.match(String(error?.code), new RegExp(`^${code}`), `${what}: the contract's code is kept`)
  }

  // 412 has no Feathers class: a plain Error, with the contract's fields on it.
  const stale = await occupants
    .patch(admitted.id, { provider: 'dr-x' }, { headers: { 'if-match': '"999"' } })
    .catch((e: Error & { code?: string; statusCode?: number }) => e)
  t.notOk(stale instanceof FeathersError, '412: no Feathers class')
  t.match(stale, { statusCode: 412, code: 'PRECONDITION_FAILED', name: 'Error' })

  const limited = await buildTestApp(t, { RATE_LIMIT_MAX: 1 })
  const tight = feathersClient(await listening(limited.app), limited.tokens.read).service('ward-occupants')
  await tight.find()
  t.ok((await tight.find().catch((e: Error) => e)) instanceof TooManyRequests, '429: TooManyRequests')

  app.db.close()
  t.ok((await occupants.find().catch((e: Error) => e)) instanceof GeneralError, '500: GeneralError')
})
