import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'tap'
import { loadConfig } from '../../config.js'
import { buildTestApp, operatorHealth } from '../helper.js'
import { ackOf, frame, openRawSocket } from './client.js'
import { adt } from './messages.js'

/** Resolves true when the socket closes within `ms` (a guard: a socket left open fails the test, never hangs it). */
const closesWithin = (socket: Socket, ms: number) =>
  new Promise<boolean>((resolve) => {
    if (socket.destroyed) resolve(true)
    socket.once('close', () => resolve(true))
    setTimeout(() => resolve(false), ms).unref()
  })

/** One admission on a new connection from `localAddress`: its ACK's code, or '' when closed unanswered. */
async function admitOnce(port: number, control: string, localAddress = '127.0.0.1'): Promise<string> {
  const socket = connect({ port, host: '127.0.0.1', localAddress })
  socket.on('error', () => {})
  await Promise.race([once(socket, 'connect').catch(() => {}), once(socket, 'close')])
  let answered = ''
  socket.on('data', (data: Buffer) => {
    answered += data.toString('utf8')
  })
  if (!socket.destroyed)
    socket.write(frame(adt({ event: 'A01', control, encounter: `E-${control}`, bed: `B-${control}` })))
  for (let i = 0; i < 100 && !socket.destroyed && !answered.includes('\x1c\r'); i++) await sleep(50)
  socket.destroy()
  return answered === '' ? '' : ackOf(answered.slice(1, -2)).code
}

test('a connection idle for HL7_IDLE_TIMEOUT_MS is closed, and its place is free for the engine', async (t) => {
  const { app } = await buildTestApp(t, { HL7_PORT: 0, HL7_MAX_CONNECTIONS: 1, HL7_IDLE_TIMEOUT_MS: 1000 })
  const port = app.hl7.port as number
  const quiet = await openRawSocket(port)
  t.teardown(() => quiet.socket.destroy())
  quiet.socket.write(frame(adt({ event: 'A01', control: 'Q1', encounter: 'E-Q1', bed: 'B-Q1' })))
  t.equal(ackOf((await quiet.next(1))[0] as string).code, 'AA', 'answered while it sends')
  t.equal(await admitOnce(port, 'X1'), '', 'while it holds the only place, another is closed unread')
  t.ok(await closesWithin(quiet.socket, 20_000), 'the quiet connection is closed by the server')
  t.equal(await admitOnce(port, 'N1'), 'AA', 'the next connection gets the place')
  t.throws(() => loadConfig({ HL7_IDLE_TIMEOUT_MS: '999' }), /HL7_IDLE_TIMEOUT_MS/)
  t.equal(loadConfig({}).HL7_IDLE_TIMEOUT_MS, 1_800_000, 'half an hour by default')
})

test('a client that never reads its ACKs is closed once idle, its place freed for the engine', async (t) => {
  const { app } = await buildTestApp(t, {
    HL7_PORT: 0,
    HL7_MAX_CONNECTIONS: 1,
    HL7_IDLE_TIMEOUT_MS: 1000,
    HL7_MAX_MESSAGE_BYTES: 1024,
    HL7_ALLOWED_SENDERS: 'HIS^GENERAL',
  })
  const port = app.hl7.port as number
  const socket = connect({ port, host: '127.0.0.1' })
  t.teardown(() => socket.destroy())
  socket.on('error', () => {})
  await once(socket, 'connect')
  socket.pause()
  // A stranger's messages are answered AR at once, each ACK echoing MSH-5 (as its MSH-3): 20 MB of
  // answers fill the system's socket buffers, then what the connection may hold, with frames of
  // the same read still in hand.
  const receiver = 'R'.repeat(800)
  const frames = Array.from({ length: 20_000 }, (_, i) =>
    frame(`MSH|^~\\&|STRANGER|X|${receiver}|FS|20260105103000||ADT^A01^ADT_A01|S${i}|P|2.5.1`),
  )
  socket.write(Buffer.concat(frames))
  const open = async () => (await operatorHealth(app)).json().hl7.connections.open as number
  for (let i = 0; i < 200 && (await open()) > 0; i++) await sleep(100)
  t.equal(await open(), 0, 'the server closes it though its answers are still untaken')
  t.equal(await admitOnce(port, 'N1'), 'AA', 'the next connection gets the place')
})

test('places kept for HL7_RESERVED_ADDRESSES: others share the rest, the engine still gets in', async (t) => {
  const { app } = await buildTestApp(t, {
    HL7_PORT: 0,
    HL7_MAX_CONNECTIONS: 3,
    HL7_RESERVED_ADDRESSES: '127.0.0.2',
    HL7_RESERVED_CONNECTIONS: 1,
  })
  const port = app.hl7.port as number
  // Two idle connections from an address not reserved take the two places left to it.
  const idle = [await openRawSocket(port), await openRawSocket(port)]
  t.teardown(() => {
    for (const raw of idle) raw.socket.destroy()
  })
  t.equal(await admitOnce(port, 'O1'), '', 'a third from that address is closed unread')
  t.equal(await admitOnce(port, 'R1', '127.0.0.2'), 'AA', 'the reserved address is answered')
  const health = (await operatorHealth(app)).json()
  t.match(health.hl7.connections, { max: 3, refused: { full: 1, address: 0, handshake: 0 } })
  // The reserved address may take every place: its places are kept for it, not fenced off.
  for (const raw of idle) raw.socket.destroy()
  await Promise.all(idle.map((raw) => closesWithin(raw.socket, 5000)))
  const engine = [await openRawSocket(port, '127.0.0.2'), await openRawSocket(port, '127.0.0.2')]
  t.teardown(() => {
    for (const raw of engine) raw.socket.destroy()
  })
  t.equal(await admitOnce(port, 'R2', '127.0.0.2'), 'AA', 'a third connection of the engine is answered')
})

test('the reserved places are checked at start', async (t) => {
  t.equal(loadConfig({}).HL7_RESERVED_CONNECTIONS, 4)
  t.ok(loadConfig({ HL7_RESERVED_ADDRESSES: '10.1.2.40, 10.9.0.0/16', HL7_RESERVED_CONNECTIONS: '8' }))
  t.throws(() => loadConfig({ HL7_RESERVED_ADDRESSES: '10.1.2.300' }), /HL7_RESERVED_ADDRESSES/)
  t.throws(
    () => loadConfig({ HL7_RESERVED_ADDRESSES: '10.1.2.40', HL7_RESERVED_CONNECTIONS: '9' }),
    /HL7_RESERVED_CONNECTIONS.*more places than HL7_MAX_CONNECTIONS \(8\)/,
  )
  t.ok(loadConfig({ HL7_RESERVED_CONNECTIONS: '9' }), 'without reserved addresses the count is not used')
  for (const wrong of ['0', '1001', 'x'])
    t.throws(() => loadConfig({ HL7_RESERVED_CONNECTIONS: wrong }), /HL7_RESERVED_CONNECTIONS/, wrong)
})
