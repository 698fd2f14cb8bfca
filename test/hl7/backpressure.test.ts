import { connect } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import v8 from 'node:v8'
import vm from 'node:vm'
import { test } from 'tap'
import { loadConfig } from '../../config.js'
import { buildTestApp, operatorHealth, type TestApp } from '../helper.js'
import { ackOf, frame, frameSplitter, openRawSocket, openSender } from './client.js'
import { adt } from './messages.js'

const answeredCount = (app: TestApp) => app.db.prepare('SELECT count(*) FROM hl7_messages').pluck().get() as number

/** Waits until nothing moves any more: the messages answered and the bytes the listener holds stay the same. */
async function settled(app: TestApp, clientBacklog: () => number) {
  let last = ''
  let same = 0
  for (let i = 0; i < 300 && same < 5; i++) {
    await sleep(200)
    const now = `${answeredCount(app)} ${(await operatorHealth(app)).json().hl7.connections.heldBytes} ${clientBacklog()}`
    same = now === last ? same + 1 : 0
    last = now
  }
}

test('a client that does not read its ACKs is not read either: what the connection holds stays bounded', async (t) => {
  const maxBytes = 65_536
  // A frame left open while the listener does not read is not the client's delay: the short frame
  // timeout must not close the connection meanwhile.
  const { app } = await buildTestApp(t, { HL7_PORT: 0, HL7_MAX_MESSAGE_BYTES: maxBytes, HL7_FRAME_TIMEOUT_MS: 1000 })
  const port = app.hl7.port as number
  const socket = connect({ port, host: '127.0.0.1' })
  t.teardown(() => socket.destroy())
  socket.on('error', (error) => t.fail(`the connection failed: ${error.message}`))
  await new Promise((resolve) => socket.once('connect', resolve))
  socket.pause()
  // MSH-5 is echoed in every ACK (as its MSH-3): each answer is as large as the message.
  const total = 400
  const receiver = 'R'.repeat(60_000)
  for (let i = 0; i < total; i++)
    socket.write(
      frame(
        adt({ event: 'A01', control: `BP${i}`, encounter: `E${i}`, bed: `B${i}` }).replace('|WARD|', `|${receiver}|`),
      ),
    )
  await settled(app, () => socket.writableLength)
  const held = (await operatorHealth(app)).json().hl7.connections.heldBytes
  t.ok(held <= 4 * maxBytes, `the connection holds ${held} bytes, at most a few messages' worth`)
  t.ok(held > 0, 'it holds what it read and answered, waiting')
  t.ok(answeredCount(app) < total, `it stopped answering (${answeredCount(app)} of ${total})`)
  t.ok(socket.writableLength > 0, 'and stopped reading: the client cannot send the rest')

  // The client reads again: the connection goes on, every message answered in order.
  const split = frameSplitter()
  const acks: string[] = []
  socket.on('data', (data: Buffer) => acks.push(...split(data)))
  socket.resume()
  for (let i = 0; i < 600 && acks.length < total; i++) await sleep(100)
  t.equal(acks.length, total, 'every message answered once the client reads')
  t.same(
    acks.map((a) => ackOf(a).control),
    Array.from({ length: total }, (_, i) => `BP${i}`),
    'in order',
  )
})

test('a client sending tiny frames without reading its ACKs holds no more memory than a few messages', async (t) => {
  // This file runs alone (test/groups.ts): the flag is this process's.
  v8.setFlagsFromString('--expose-gc')
  const gc = vm.runInNewContext('gc') as () => void
  const { app } = await buildTestApp(t, { HL7_PORT: 0 })
  const socket = connect({ port: app.hl7.port as number, host: '127.0.0.1' })
  t.teardown(() => socket.destroy())
  socket.on('error', () => {})
  await new Promise((resolve) => socket.once('connect', resolve))
  socket.pause()
  gc()
  const before = process.memoryUsage().heapUsed
  // 200 000 frames of 9 bytes (each parsed, answered AR): 2.4 MB sent, within HL7_MAX_MESSAGE_BYTES twice.
  const tiny = Buffer.from('\x0bMSH|^~\\&|\x1c\x0d', 'latin1')
  const chunk = Buffer.concat(Array.from({ length: 20_000 }, () => tiny))
  for (let i = 0; i < 10; i++) socket.write(chunk)
  await settled(app, () => socket.writableLength)
  gc()
  const grown = (process.memoryUsage().heapUsed - before) / 1_048_576
  t.ok(grown < 64, `the heap grew ${grown.toFixed(1)} MiB holding the frames in hand`)
  t.ok(answeredCount(app) < 200_000, 'it stopped answering')
})

/** An A01 whose frame carries `extra` after its segments. */
const withExtra = (control: string, extra: string) =>
  `${adt({ event: 'A01', control, encounter: `E-${control}`, bed: `B-${control}` })}${extra}`

test('a frame of many segments or fields gets AR naming the limit without being parsed; the connection goes on', async (t) => {
  const { app } = await buildTestApp(t, { HL7_PORT: 0 })
  const port = app.hl7.port as number
  const raw = await openRawSocket(port)
  t.teardown(() => raw.socket.destroy())
  // 1 MB of one-character segments, and one segment of 20 000 fields.
  raw.socket.write(frame(withExtra('SEG', '\rX'.repeat(500_000))))
  raw.socket.write(frame(withExtra('FLD', `\rZPV${'|'.repeat(20_000)}`)))
  raw.socket.write(frame(withExtra('AFTER', '')))
  // Another connection is answered meanwhile.
  const other = await openSender(port)
  t.teardown(() => other.close())
  t.equal(ackOf(await other.send(withExtra('OTHER', ''))).code, 'AA', 'another connection is answered')
  const [segments, fields, after] = (await raw.next(3)).map(ackOf)
  t.match(segments, { code: 'AR', control: 'SEG', text: /more than 1000 segments \(HL7_MAX_SEGMENTS\)/ })
  t.match(fields, {
    code: 'AR',
    control: 'FLD',
    text: /more than 10000 fields, repetitions and components \(HL7_MAX_FIELDS\)/,
  })
  t.match(after, { code: 'AA', control: 'AFTER' }, 'the connection goes on')
  t.notOk(raw.socket.destroyed)
  t.equal(app.db.prepare("SELECT count(*) FROM hl7_messages WHERE control_id IN ('SEG', 'FLD')").pluck().get(), 0)
})

test('HL7_MAX_SEGMENTS and HL7_MAX_FIELDS are settings: a message within them is read', async (t) => {
  const { app } = await buildTestApp(t, { HL7_PORT: 0, HL7_MAX_SEGMENTS: 10, HL7_MAX_FIELDS: 100 })
  const raw = await openRawSocket(app.hl7.port as number)
  t.teardown(() => raw.socket.destroy())
  raw.socket.write(frame(withExtra('S10', '\rNTE|1\rNTE|2\rNTE|3\rNTE|4\rNTE|5\rNTE|6')))
  raw.socket.write(frame(withExtra('S11', '\rNTE|1\rNTE|2\rNTE|3\rNTE|4\rNTE|5\rNTE|6\rNTE|7')))
  raw.socket.write(frame(withExtra('F', `\rNTE${'|'.repeat(60)}`)))
  // CRLF ends a segment once, as the parser reads it.
  raw.socket.write(frame(withExtra('CRLF', '\rNTE|1\rNTE|2\rNTE|3\rNTE|4\rNTE|5\rNTE|6').replaceAll('\r', '\r\n')))
  const [ten, eleven, fields, crlf] = (await raw.next(4)).map(ackOf)
  t.match(ten, { code: 'AA' }, '10 segments')
  t.match(crlf, { code: 'AA', control: 'CRLF' }, '10 segments ended by CRLF')
  t.match(eleven, { code: 'AR', text: /more than 10 segments/ }, '11 segments')
  t.match(loadConfig({}), { HL7_MAX_SEGMENTS: 1000, HL7_MAX_FIELDS: 10_000 })
  for (const [name, wrong] of [
    ['HL7_MAX_SEGMENTS', '9'],
    ['HL7_MAX_SEGMENTS', 'many'],
    ['HL7_MAX_FIELDS', '99'],
    ['HL7_MAX_FIELDS', '1000001'],
  ] as const)
    t.throws(() => loadConfig({ [name]: wrong }), new RegExp(name), `${name}=${wrong}`)
  t.match(fields, { code: 'AR', text: /more than 100 fields/ })
})
