import { join } from 'node:path'
import { type Test, test } from 'tap'
import { runCli } from '../../cli/run.js'
import { capture } from '../cli/capture.js'
import { bearer, operatorHealth, type TestApp } from '../helper.js'
import { buildLoggedApp } from '../reliability/fault-helpers.js'
import { ackOf, frame, openRawSocket } from './client.js'
import { adt } from './messages.js'
import { occupants } from './ward.js'

// A message whose MSH-3^MSH-4 is not in HL7_ALLOWED_SENDERS (or not from its address there) is
// answered AR before the message log is asked anything: it is stored nowhere, reserves no control
// id, and its answer is the same whether the control id it names was used or not.

async function clientAt(t: Test, port: number, localAddress: string) {
  const raw = await openRawSocket(port, localAddress)
  t.teardown(() => raw.socket.destroy())
  let sent = 0
  return async function send(text: string) {
    raw.socket.write(frame(text))
    sent++
    return ackOf((await raw.next(sent))[sent - 1] as string)
  }
}

async function loggedMessages(app: TestApp, token: string) {
  const res = await app.inject({ url: '/hl7/messages', headers: bearer(token) })
  return res.json() as { total: number; hl7Messages: { controlId: string; status: string }[] }
}

test("a stranger's messages leave no row, only a count and a log line a minute", async (t) => {
  const database = join(t.testdir(), 'ward.db')
  const { app, lines, token } = await buildLoggedApp(t, {
    DATABASE_PATH: database,
    HL7_PORT: 0,
    HL7_ALLOWED_SENDERS: 'HIS^GENERAL',
  })
  const admin = token('admin-1', 'admin')
  const send = await clientAt(t, app.hl7.port as number, '127.0.0.1')
  // Large fields the ACK echoes (MSH-3, MSH-5): stored, ten of them made 10 MB of log.
  const big = 'X'.repeat(200_000)
  for (let i = 0; i < 10; i++) {
    const text = adt({ event: 'A01', control: `S${i}`, sender: `ROGUE${big}`, encounter: `E${i}`, bed: `B${i}` })
    const ack = await send(text.replace('|WARD|', `|WARD${big}|`))
    t.equal(ack.code, 'AR', `message ${i}: AR`)
    t.match(ack.err, /^ERR\|MSH\^1\^3\^207/, 'naming MSH-3')
    t.match(ack.text, /is not in HL7_ALLOWED_SENDERS/)
  }
  t.equal((await send(adt({ event: 'A01', control: 'H1', encounter: 'EH', bed: 'BH' }))).code, 'AA')

  const log = await loggedMessages(app, admin)
  t.same(
    log.hl7Messages.map((m) => [m.controlId, m.status]),
    [['H1', 'applied']],
    'only the allowed sender is in the message log',
  )
  t.equal(log.total, 1)
  t.same(
    (await occupants(app, admin)).map((o) => o.encounter),
    ['EH'],
  )
  const health = (await operatorHealth(app)).json()
  t.equal(health.hl7.connections.refused.sender, 10, '/health counts them (operator)')
  t.notOk((await app.inject('/health')).json().hl7.connections, 'the counts are for the operator only')
  const refusedLines = lines.filter((l) => /HL7_ALLOWED_SENDERS/.test(l.msg))
  t.equal(refusedLines.length, 1, 'one warning for the address within the minute')
  t.match(refusedLines[0], { level: 40, remote: '127.0.0.1', why: /^claimed MSH-3\^MSH-4 ROGUEX{59}\.\.\.\^GENERAL$/ })
  t.notOk(
    lines.some((l) => JSON.stringify(l).length > 2000),
    'no log line carries the large fields',
  )

  const status = capture()
  t.equal(await runCli(['--database', database, 'hl7', 'status'], status), 0)
  t.match(status.stdout.join('\n'), /applied\t1\nignored\t0\nparked\t0\nrejected\t0/, 'hl7 status: no rejected row')
})

test("a stranger's message cannot take another sender's next control id, nor learn which were used", async (t) => {
  const { app, token } = await buildLoggedApp(t, {
    DATABASE_PATH: join(t.testdir(), 'ward.db'),
    HL7_PORT: 0,
    HL7_ALLOWED_SENDERS: 'HIS^GENERAL@127.0.0.1',
  })
  const admin = token('admin-1', 'admin')
  const port = app.hl7.port as number
  const his = await clientAt(t, port, '127.0.0.1')
  const stranger = await clientAt(t, port, '127.0.0.2')
  const h1 = adt({ event: 'A01', control: 'H1', encounter: 'E1', bed: 'B1' })
  t.equal((await his(h1)).code, 'AA')

  // The forged message names HIS's next control id before HIS sends it.
  const h2 = adt({ event: 'A01', control: 'H2', encounter: 'E2', bed: 'B2' })
  const forged = await stranger(adt({ event: 'A03', control: 'H2', encounter: 'E1' }))
  t.match(forged, { code: 'AR', control: 'H2', text: /may not send from 127\.0\.0\.2/ })
  t.same(await his(h2), { code: 'AA', control: 'H2', text: 'applied', err: null }, 'the real H2 is applied')
  t.same(
    (await occupants(app, admin)).map((o) => [o.encounter, o.dischargedAt]),
    [
      ['E1', undefined],
      ['E2', undefined],
    ],
    'the forged discharge changed nothing',
  )

  // A resend of H1 byte for byte, H1 with other content and an id never used: one answer.
  const answers = [await stranger(h1), await stranger(adt({ event: 'A03', control: 'H1', encounter: 'E1' }))]
  const unused = await stranger(adt({ event: 'A03', control: 'H9', encounter: 'E1' }))
  for (const answer of answers) {
    t.equal(answer.code, 'AR', 'not the stored AA, not AR 205')
    t.equal(answer.text, unused.text)
    t.equal(answer.err, unused.err)
  }
  const log = await loggedMessages(app, admin)
  t.same(
    log.hl7Messages.map((m) => [m.controlId, m.status]),
    [
      ['H2', 'applied'],
      ['H1', 'applied'],
    ],
  )
  t.equal((await operatorHealth(app)).json().hl7.connections.refused.sender, 4)
})

test('a message whose header does not read (no MSH-10) from a stranger is not logged either', async (t) => {
  const { app, token } = await buildLoggedApp(t, {
    DATABASE_PATH: join(t.testdir(), 'ward.db'),
    HL7_PORT: 0,
    HL7_ALLOWED_SENDERS: 'HIS^GENERAL',
  })
  const admin = token('admin-1', 'admin')
  const send = await clientAt(t, app.hl7.port as number, '127.0.0.1')
  t.match(await send(adt({ event: 'A01', control: '', sender: 'ROGUE', encounter: 'E1', bed: 'B1' })), {
    code: 'AR',
    text: /ROGUE .* is not in HL7_ALLOWED_SENDERS/,
  })
  t.match(await send(adt({ event: 'A01', control: '', encounter: 'E1', bed: 'B1' })), {
    code: 'AR',
    text: /MSH-10/,
  })
  t.equal((await loggedMessages(app, admin)).total, 1, "the allowed sender's, only")
})
