// The Feathers peer of the CRUD scenarios (issue 31): FeathersJS v5 with the Koa REST transport
// and a @feathersjs/knex service over SQLite (knex's better-sqlite3 client), the way a Feathers
// team would write this resource. Durable like the service: WAL with synchronous=FULL, so every
// commit is on disk before the answer. The bench seeds its file (seed.js) and starts it.
import { feathers } from '@feathersjs/feathers'
import { KnexService } from '@feathersjs/knex'
import { bodyParser, errorHandler, koa, rest } from '@feathersjs/koa'
import knex from 'knex'
import { authenticate, bedConflict, parseNulls, restrictToFacility, setCreated, setDischarge } from './hooks.js'

const db = knex({
  client: 'better-sqlite3',
  connection: { filename: process.env.DATABASE_PATH },
  useNullAsDefault: true,
  pool: {
    afterCreate(connection, done) {
      connection.pragma('journal_mode = WAL')
      connection.pragma('synchronous = FULL')
      done()
    },
  },
})

const tokens = new Map()
for (const { hash, ...user } of await db('tokens').select()) tokens.set(hash, user)

const app = koa(feathers())
app.use(errorHandler())
app.use(bodyParser())
app.configure(rest())
app.use('ward-occupants', new KnexService({ Model: db, name: 'ward_occupants', paginate: { default: 50, max: 500 } }), {
  methods: ['find', 'get', 'create', 'patch'],
})
app.service('ward-occupants').hooks({
  before: {
    all: [authenticate(tokens)],
    find: [parseNulls, restrictToFacility],
    get: [restrictToFacility],
    create: [setCreated],
    patch: [restrictToFacility, setDischarge],
  },
  error: { create: [bedConflict] },
})

const port = Number(process.env.PORT)
await app.listen(port, '127.0.0.1')
process.stdout.write(`listening http://127.0.0.1:${port}\n`)
process.on('SIGTERM', async () => {
  await db.destroy()
  process.exit(0)
})
