// The database limit (docs/PERFORMANCE.md): bare Fastify and better-sqlite3 doing the bench's
// ward occupant CRUD on a copy of the service's seeded file (the same table and indexes, the
// service's triggers dropped), durable the way the service is (the writes of one event-loop turn
// in one transaction, the WAL synced off the event loop before their answers), and nothing else:
// no validation, no audit, no feed, no notification, no idempotency, no versions, no checkpoints
// in a thread of their own. A token is only looked up for its facility (a Map read at start).
// Started by bench/run.js: DATABASE_PATH, PORT, LIMIT_TOKENS (a JSON file: token -> facility).
import { randomUUID } from 'node:crypto'
import { fdatasync, openSync, readFileSync } from 'node:fs'
import BetterSqlite3 from 'better-sqlite3'
import Fastify from 'fastify'

const db = new BetterSqlite3(process.env.DATABASE_PATH)
db.pragma('journal_mode = WAL')
db.pragma('synchronous = NORMAL')
const facilities = new Map(Object.entries(JSON.parse(readFileSync(process.env.LIMIT_TOKENS, 'utf8'))))

const RECORD = `json_object('id', id, 'version', version, 'createdAt', created_at, 'createdBy', created_by,
  'facility', facility, 'encounter', encounter, 'room', room, 'bed', bed, 'provider', provider,
  'occupiedAt', occupied_at, 'occupiedBy', occupied_by, 'dischargedAt', discharged_at, 'dischargedBy', discharged_by)`
const byId = db.prepare(`SELECT ${RECORD} FROM ward_occupants WHERE id = ?`).pluck()
const active = db
  .prepare(
    `SELECT json_group_array(json(r)) FROM (SELECT ${RECORD} AS r FROM ward_occupants
     WHERE facility = ? AND discharged_at IS NULL ORDER BY created_at, id LIMIT ?)`,
  )
  .pluck()
const insert = db
  .prepare(
    `INSERT INTO ward_occupants (id, created_at, created_by, facility, encounter, room, bed, provider, occupied_at, occupied_by)
   VALUES (?, ?, 'bench', ?, ?, ?, ?, ?, ?, 'bench') RETURNING ${RECORD}`,
  )
  .pluck()
const discharge = db
  .prepare(
    `UPDATE ward_occupants SET discharged_at = ?, discharged_by = 'bench', version = version + 1
     WHERE id = ? AND discharged_at IS NULL RETURNING ${RECORD}`,
  )
  .pluck()

// Group commit: the writes of one turn run in one transaction; their answers wait for the sync.
let batch = []
let wal
function write(run) {
  return new Promise((resolve, reject) => {
    if (batch.length === 0) setImmediate(commit)
    batch.push({ run, resolve, reject })
  })
}
function commit() {
  const jobs = batch
  batch = []
  const results = []
  db.exec('BEGIN IMMEDIATE')
  for (const job of jobs) {
    try {
      results.push({ job, value: job.run() })
    } catch (error) {
      results.push({ job, error })
    }
  }
  db.exec('COMMIT')
  wal ??= openSync(`${process.env.DATABASE_PATH}-wal`, 'r+')
  fdatasync(wal, () => {
    for (const { job, value, error } of results) error ? job.reject(error) : job.resolve(value)
  })
}

const facilityOf = (request) => facilities.get(request.headers.authorization?.slice('Bearer '.length)) ?? null
const app = Fastify({ logger: false })
const send = (reply, text) => reply.type('application/json').send(text)

app.get('/ward-occupants/:id', (request, reply) => {
  const record = byId.get(request.params.id)
  return record === undefined ? reply.code(404).send({ code: 'NOT_FOUND' }) : send(reply, record)
})
app.get('/ward-occupants', (request, reply) => {
  const limit = Math.min(Number(request.query.$limit ?? 50), 500)
  return send(reply, `{"wardOccupants":${active.get(facilityOf(request), limit)}}`)
})
app.post('/ward-occupants', async (request, reply) => {
  const b = request.body
  const now = Date.now()
  const facility = facilityOf(request)
  try {
    const record = await write(() =>
      insert.get(randomUUID(), now, facility, b.encounter, b.room ?? null, b.bed, b.provider ?? null, now),
    )
    return send(reply, record)
  } catch {
    return reply.code(409).send({ code: 'BED_OCCUPIED' })
  }
})
app.patch('/ward-occupants/:id', async (request, reply) => {
  const record = await write(() => discharge.get(Date.now(), request.params.id))
  return record === undefined ? reply.code(409).send({ code: 'ALREADY_DISCHARGED' }) : send(reply, record)
})
app.get('/health', () => ({ ok: true }))

await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' })
process.on('SIGTERM', async () => {
  await app.close()
  db.close()
  process.exit(0)
})
