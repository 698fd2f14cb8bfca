// The origin platform's own stack as a peer: FeathersJS v5 with Socket.io, one in-memory service,
// every connection in one channel, so every connection receives every `created` event.
import { feathers } from '@feathersjs/feathers'
import socketio from '@feathersjs/socketio'

class WardOccupants {
  seq = 0
  async create(data) {
    return { id: String(++this.seq).padStart(24, '0'), createdAt: Date.now(), ...data }
  }
}

const app = feathers()
app.configure(socketio())
app.use('ward-occupants', new WardOccupants())
app.on('connection', (connection) => app.channel('ward').join(connection))
app.publish(() => app.channel('ward'))

const port = Number(process.env.PORT)
await app.listen(port)
process.stdout.write(`listening http://127.0.0.1:${port}\n`)
process.on('SIGTERM', () => process.exit(0))
