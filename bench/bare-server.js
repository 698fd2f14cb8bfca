// The limit of this stack on this machine: a bare Fastify route returning a fixed ~300-byte JSON
// object through a response schema, no logger, no database, no auth. It runs as its own process
// like the service does, so both are measured the same way.
import Fastify from 'fastify'

const record = {
  id: '66f1a2b3c4d5e6f708192a3b',
  createdAt: 1727000000000,
  createdBy: 'nurse-3',
  facility: 'ward-3',
  encounter: 'enc-1000042',
  room: 'R-12',
  bed: 'B-48',
  provider: 'dr-17',
  occupiedAt: 1727000000000,
  occupiedBy: 'patient-77',
  dischargedAt: 1727086400000,
  dischargedBy: 'nurse-3',
  note: 'fixed benchmark payload',
}

const str = { type: 'string' }
const int = { type: 'integer' }
const schema = {
  response: {
    200: {
      type: 'object',
      additionalProperties: false,
      properties: {
        id: str,
        createdAt: int,
        createdBy: str,
        facility: str,
        encounter: str,
        room: str,
        bed: str,
        provider: str,
        occupiedAt: int,
        occupiedBy: str,
        dischargedAt: int,
        dischargedBy: str,
        note: str,
      },
    },
  },
}

const app = Fastify({ logger: false })
app.get('/bare', { schema }, async function bare() {
  return record
})
const address = await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' })
process.stdout.write(`listening ${address}\n`)
process.on('SIGTERM', () => app.close().then(() => process.exit(0)))
