// The limit of the stack for a fan-out: bare Fastify holding event streams, writing each change as
// one pre-serialized SSE frame to every open stream. No auth, no database, no per-stream filter.
import Fastify from 'fastify'

const streams = new Set()
const app = Fastify({ logger: false })
let seq = 0

app.get('/events', function events(_request, reply) {
  reply.hijack()
  reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' })
  reply.raw.flushHeaders()
  streams.add(reply.raw)
  reply.raw.on('close', () => streams.delete(reply.raw))
})

app.post('/ward-occupants', async function create(request) {
  const record = { id: String(++seq).padStart(24, '0'), createdAt: Date.now(), ...request.body }
  const frame = `id: ${seq}\nevent: ward-occupants created\ndata: ${JSON.stringify(record)}\n\n`
  for (const stream of streams) stream.write(frame)
  return record
})

const address = await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' })
process.stdout.write(`listening ${address}\n`)
process.on('SIGTERM', () => {
  for (const stream of streams) stream.end()
  app.close().then(() => process.exit(0))
})
