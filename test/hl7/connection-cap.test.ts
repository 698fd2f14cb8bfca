import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { type Test, test } from 'tap'
import { loadConfig } from '../../config.js'
import { buildTestApp, operatorHealth, type TestApp } from '../helper.js'
import { ackOf, frame, openRawSocket } from './client.js'
import { adt } from './messages.js'

/** Resolves when the socket closes, reset or not (events.once would reject on the reset's error). */
const closed = (socket: Socket) =>
  new Promise<void>((resolve) => (socket.destroyed ? resolve() : socket.once('close', () => resolve())))

/** The warnings the listener logs, caught on the app's logger (silent in tests). */
function warnings(t: Test, app: TestApp) {
  const lines: { remote?: string; msg: string }[] = []
  const log = app.log as unknown as { warn: (...args: unknown[]) => void }
  const original = log.warn
  log.warn = (fields: unknown, msg: unknown) => {
    lines.push({ ...(fields as object), msg: String(msg) })
  }
  t.teardown(() => {
    log.warn = original
  })
  return lines
}

/** A connection that sends one admission and reports whether it was answered before the close. */
async function tryOnce(port: number, control: string, localAddress = '127.0.0.1') {
  const socket = connect({ port, host: '127.0.0.1', localAddress })
  socket.on('error', () => {})
  // A refused connection may be reset before the client even sees it established.
  await Promise.race([once(socket, 'connect').catch(() => {}), closed(socket)])
  let answered = ''
  socket.on('data', (data: Buffer) => {
    answered += data.toString('utf8')
  })
  if (!socket.destroyed)
    socket.write(frame(adt({ event: 'A01', control, encounter: `E-${control}`, bed: `B-${control}` })))
  await Promise.race([closed(socket), sleep(2000)])
  const wasClosed = socket.destroyed
  socket.destroy()
  return { answered, closed: wasClosed }
}

/** A connection kept open that sends admissions one at a time, each ACK awaited. */
async function openHolder(port: number) {
  const raw = await openRawSocket(port)
  let sent = 0
  return {
    socket: raw.socket,
    async send(control: string): Promise<string> {
      raw.socket.write(frame(adt({ event: 'A01', control, encounter: `E-${control}`, bed: `B-${control}` })))
      sent++
      return ackOf((await raw.next(sent))[sent - 1] as string).code
    },
  }
}

test('HL7_MAX_CONNECTIONS: one connection more is closed unread, the others go on, and a slot frees on close', async (t) => {
  const { app } = await buildTestApp(t, { HL7_PORT: 0, HL7_MAX_CONNECTIONS: 2 })
  const port = app.hl7.port as number
  const logged = warnings(t, app)
  const first = await openHolder(port)
  const second = await openHolder(port)
  t.teardown(() => second.socket.destroy())
  t.equal(await first.send('C1'), 'AA')
  t.equal(await second.send('C2'), 'AA')

  // The third and fourth: closed at once, nothing of what they sent is answered (or applied).
  for (const control of ['X3', 'X4']) {
    const third = await tryOnce(port, control)
    t.ok(third.closed, `${control}: closed`)
    t.equal(third.answered, '', `${control}: nothing was read from it`)
  }
  t.equal(app.db.prepare("SELECT count(*) FROM hl7_messages WHERE control_id LIKE 'X%'").pluck().get(), 0)
  const full = logged.filter((l) => /HL7_MAX_CONNECTIONS/.test(l.msg))
  t.equal(full.length, 1, 'logged once for the address, not once per try')
  t.match(full[0], { remote: '127.0.0.1' })
  const health = (await operatorHealth(app)).json()
  t.match(health.hl7.connections, { open: 2, max: 2, refused: { full: 2, address: 0 } })
  t.notOk((await app.inject('/health')).json().hl7.connections, 'the counts are for the operator only')

  // The two allowed connections keep working.
  t.equal(await first.send('C3'), 'AA')
  t.equal(await second.send('C4'), 'AA')

  // One closes: its place is free again for the next.
  first.socket.end()
  let answered = ''
  for (let i = 0; i < 50 && answered === ''; i++) {
    answered = (await tryOnce(port, `F${i}`)).answered
    if (answered === '') await sleep(50)
  }
  t.match(answered, /MSA\|AA\|F\d+/, 'a new connection is answered once one closed')
})

test('a flood from an address not allowed takes no place: it is closed unread, and an allowed client still gets in', async (t) => {
  const { app } = await buildTestApp(t, { HL7_PORT: 0, HL7_MAX_CONNECTIONS: 1, HL7_ALLOWED_ADDRESSES: '127.0.0.1' })
  const port = app.hl7.port as number
  const logged = warnings(t, app)
  // 127.0.0.2 is this machine too, but not an allowed address.
  const flood = await Promise.all(Array.from({ length: 20 }, (_, i) => tryOnce(port, `R${i}`, '127.0.0.2')))
  t.ok(
    flood.every((f) => f.closed && f.answered === ''),
    'every connection from 127.0.0.2 was closed and answered nothing',
  )
  const refusedLines = logged.filter((l) => /HL7_ALLOWED_ADDRESSES/.test(l.msg))
  t.equal(refusedLines.length, 1, 'one line for the address')
  const allowed = await openHolder(port)
  t.teardown(() => allowed.socket.destroy())
  t.equal(await allowed.send('OK'), 'AA')
  const health = (await operatorHealth(app)).json()
  t.equal(health.hl7.connections.refused.address, 20)
  t.equal(health.hl7.connections.open, 1)
})

test('the refused connection is closed even while the allowed ones are mid-frame', async (t) => {
  const { app } = await buildTestApp(t, { HL7_PORT: 0, HL7_MAX_CONNECTIONS: 1 })
  const port = app.hl7.port as number
  const holder = await openRawSocket(port)
  holder.socket.write(Buffer.concat([Buffer.from([0x0b]), Buffer.from('MSH|^~\\&|HIS|GENERAL|')]))
  const extra = await tryOnce(port, 'MID')
  t.ok(extra.closed)
  t.equal(extra.answered, '')
  holder.socket.write(Buffer.from('||20260101120000||ADT^A01|H1|P|2.5.1\r\x1c\r'))
  const [ack] = await holder.next(1)
  t.equal(ackOf(ack as string).control, 'H1', 'the holder was never disturbed')
  holder.socket.destroy()
})

test('HL7_MAX_CONNECTIONS is checked at start: 8 by default, a whole number from 1 to 1000', async (t) => {
  t.equal(loadConfig({}).HL7_MAX_CONNECTIONS, 8)
  t.equal(loadConfig({ HL7_MAX_CONNECTIONS: '2' }).HL7_MAX_CONNECTIONS, 2)
  for (const wrong of ['0', '1001', '2.5', 'many'])
    t.throws(() => loadConfig({ HL7_MAX_CONNECTIONS: wrong }), /HL7_MAX_CONNECTIONS/, wrong)
})
