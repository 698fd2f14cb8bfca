import { execFileSync } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import Client, { Message } from 'node-hl7-client'
import { test } from 'tap'
import { loadConfig } from '../../config.js'
import { buildTestApp, operatorHealth } from '../helper.js'
import { ackOf } from './client.js'
import { adt } from './messages.js'

/** A CA, a server certificate for 127.0.0.1 and a client certificate, made with openssl. */
function certificates(dir: string) {
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' })
  run(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '1',
    '-subj',
    '/CN=ward test CA',
  )
  for (const name of ['server', 'client']) {
    run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`)
    const ext = join(dir, `${name}.ext`)
    execFileSync('sh', ['-c', `printf 'subjectAltName=IP:127.0.0.1\\n' > ${ext}`])
    run(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.pem`,
      '-days',
      '1',
      '-extfile',
      ext,
    )
  }
  const file = (name: string) => join(dir, name)
  return { file, read: (name: string) => readFileSync(file(name)) }
}

function sendOverTls(port: number, tls: Record<string, unknown>, text: string): Promise<string> {
  const client = new Client({ host: '127.0.0.1', version: '2.5.1', tls })
  return new Promise((resolve, reject) => {
    const connection = client.createConnection(
      { port, version: '2.5.1', waitAck: true, maxConnectionAttempts: 1 },
      async (res) => {
        resolve(res.getMessage().toString())
        await connection.close()
      },
    )
    connection.on('client.error', reject)
    connection.sendMessage(new Message({ text })).catch(reject)
    setTimeout(() => {
      reject(new Error('no ACK'))
      void connection.close()
    }, 10_000).unref()
  })
}

test('MLLP over mutual TLS: a client with a certificate of the CA is answered, one without is refused', async (t) => {
  const certs = certificates(t.testdir())
  const { app } = await buildTestApp(t, {
    HL7_PORT: 0,
    HL7_TLS_CERT: certs.file('server.pem'),
    HL7_TLS_KEY: certs.file('server.key'),
    HL7_TLS_CA: certs.file('ca.pem'),
  })
  const port = app.hl7.port as number
  const trusted = { ca: certs.read('ca.pem'), rejectUnauthorized: true }
  const a01 = adt({ event: 'A01', control: 'TLS1', encounter: 'E1', bed: 'B1' })
  const ack = await sendOverTls(
    port,
    { ...trusted, cert: certs.read('client.pem'), key: certs.read('client.key') },
    a01,
  )
  t.equal(ackOf(ack).code, 'AA')
  await t.rejects(sendOverTls(port, trusted, adt({ event: 'A01', control: 'TLS2', encounter: 'E2', bed: 'B2' })))
  t.equal(app.db.prepare('SELECT count(*) FROM ward_occupants').pluck().get(), 1)
})

test('TCP connections that never start their TLS handshake hold no place for long: the certified engine gets through', async (t) => {
  const certs = certificates(t.testdir())
  const { app } = await buildTestApp(t, {
    HL7_PORT: 0,
    HL7_TLS_CERT: certs.file('server.pem'),
    HL7_TLS_KEY: certs.file('server.key'),
    HL7_TLS_CA: certs.file('ca.pem'),
    HL7_HANDSHAKE_TIMEOUT_MS: 3000,
  })
  const port = app.hl7.port as number
  // Every place taken by a connection that says nothing.
  const silent = await Promise.all(
    Array.from({ length: 8 }, async () => {
      const socket = connect({ port, host: '127.0.0.1' })
      socket.on('error', () => {})
      const closed = once(socket, 'close')
      await once(socket, 'connect')
      return { socket, closed }
    }),
  )
  t.teardown(() => {
    for (const { socket } of silent) socket.destroy()
  })
  for (let i = 0; i < 50 && (await operatorHealth(app)).json().hl7.connections.handshaking < 8; i++) await sleep(20)
  t.match(
    (await operatorHealth(app)).json().hl7.connections,
    { open: 8, handshaking: 8, max: 8 },
    'counted while they wait',
  )
  const closedAll = await Promise.race([
    Promise.all(silent.map(({ closed }) => closed)).then(() => true),
    sleep(20_000).then(() => false),
  ])
  t.ok(closedAll, 'each is closed by the server once its handshake timed out')
  const certified = {
    ca: certs.read('ca.pem'),
    rejectUnauthorized: true,
    cert: certs.read('client.pem'),
    key: certs.read('client.key'),
  }
  const codes: string[] = []
  for (let i = 1; i <= 5; i++)
    codes.push(
      ackOf(
        await sendOverTls(port, certified, adt({ event: 'A01', control: `ENG${i}`, encounter: `E${i}`, bed: `B${i}` })),
      ).code,
    )
  t.same(codes, ['AA', 'AA', 'AA', 'AA', 'AA'], 'the certified engine is answered')
  const connections = (await operatorHealth(app)).json().hl7.connections
  t.ok(connections.refused.handshake >= 8, 'the timed-out handshakes are counted')
  t.equal(connections.handshaking, 0)
})

test('off loopback, the server refuses to start without HL7_ALLOWED_ADDRESSES or mutual TLS', async (t) => {
  t.throws(() => loadConfig({ HL7_PORT: '2575', HL7_HOST: '0.0.0.0' }), /HL7_HOST="0.0.0.0": is not loopback/)
  t.ok(loadConfig({ HL7_PORT: '2575', HL7_HOST: '0.0.0.0', HL7_ALLOWED_ADDRESSES: '10.1.2.40, 10.9.0.0/16' }))
  t.ok(loadConfig({ HL7_PORT: '2575', HL7_HOST: '0.0.0.0', HL7_TLS_CERT: 'c', HL7_TLS_KEY: 'k', HL7_TLS_CA: 'a' }))
  t.throws(() => loadConfig({ HL7_ALLOWED_ADDRESSES: '10.0.0.0/33' }), /HL7_ALLOWED_ADDRESSES/)
  t.throws(() => loadConfig({ HL7_TLS_CERT: 'c' }), /HL7_TLS_CERT and HL7_TLS_KEY go together/)
  t.throws(() => loadConfig({ HL7_TIMEZONE: 'Mars/Olympus' }), /HL7_TIMEZONE/)
  t.throws(() => loadConfig({ HL7_PORT: 'x' }), /HL7_PORT/)
  t.equal(loadConfig({}).HL7_HANDSHAKE_TIMEOUT_MS, 10_000)
  for (const wrong of ['99', '120001', 'soon'])
    t.throws(() => loadConfig({ HL7_HANDSHAKE_TIMEOUT_MS: wrong }), /HL7_HANDSHAKE_TIMEOUT_MS/, wrong)
})
