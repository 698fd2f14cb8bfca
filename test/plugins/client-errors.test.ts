import { connect } from 'node:net'
import t, { type Test } from 'tap'
import { buildApp, listenOptions } from '../../app.js'
import { defaultConfig } from '../../config.js'

/**
 * What happens on the wire before a request exists: a client too slow to send its request,
 * headers too large, bytes that are not HTTP. inject has no connection, so these tests listen on
 * a real port with the options server.ts uses.
 */
async function listening(t: Test, requestTimeoutMs: number) {
  const config = defaultConfig({ DATABASE_PATH: ':memory:', LOG_LEVEL: 'silent', REQUEST_TIMEOUT_MS: requestTimeoutMs })
  const app = await buildApp(config, listenOptions(config))
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error('no port')
  return { port: address.port, app }
}

/** Sends raw bytes, then collects everything the server answers until it closes the connection. */
function exchange(port: number, chunks: string[], pauseMs = 0): Promise<{ answer: string; elapsedMs: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now()
    const socket = connect(port, '127.0.0.1')
    let answer = ''
    socket.setEncoding('utf8')
    socket.on('data', (data: string) => {
      answer += data
    })
    socket.on('error', reject)
    socket.on('close', () => resolve({ answer, elapsedMs: Date.now() - started }))
    socket.on('connect', async () => {
      for (const chunk of chunks) {
        socket.write(chunk)
        if (pauseMs) await new Promise((r) => setTimeout(r, pauseMs))
      }
    })
  })
}

function parse(answer: string) {
  const [head = '', body = ''] = answer.split('\r\n\r\n')
  return { statusLine: head.split('\r\n')[0], head, body: JSON.parse(body) as Record<string, unknown> }
}

t.test(
  'a request not received within REQUEST_TIMEOUT_MS gets a 408 in the error shape, then the connection closes',
  async (t) => {
    const { port } = await listening(t, 300)
    // the headers never end: the client stalls after the first line
    const { answer, elapsedMs } = await exchange(port, ['GET /health HTTP/1.1\r\nHost: localhost\r\n'])
    const { statusLine, head, body } = parse(answer)
    t.equal(statusLine, 'HTTP/1.1 408 Request Timeout')
    t.match(head, /connection: close/i)
    t.match(head, /content-type: application\/json/i)
    t.same(body, {
      statusCode: 408,
      error: 'Request Timeout',
      message: 'the request was not received completely within the request timeout',
      code: 'REQUEST_TIMEOUT',
      name: 'Timeout',
    })
    t.ok(elapsedMs >= 250, `not cut before the limit (${elapsedMs} ms)`)
  },
)

t.test('a body trickled in slower than the timeout is cut off too', async (t) => {
  const { port, app } = await listening(t, 300)
  // a valid token, so the request gets past authentication and waits for its body
  const { token } = app.tokens.create({ account: 'nurse', role: 'write', label: 'slow client' })
  const head =
    'POST /ward-occupants HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n' +
    `Authorization: Bearer ${token}\r\nContent-Length: 40\r\n\r\n`
  const { answer, elapsedMs } = await exchange(port, [head, '{"bed":', '"B-1"'], 200)
  t.equal(parse(answer).statusLine, 'HTTP/1.1 408 Request Timeout')
  // Node's default headers timeout (60 s) must not be what ends it
  t.ok(elapsedMs < 10_000, `cut off near the limit (${elapsedMs} ms)`)
  t.equal(parse(answer).body.code, 'REQUEST_TIMEOUT')
})

t.test('a request within the timeout is served', async (t) => {
  const { port } = await listening(t, 2000)
  const { answer } = await exchange(port, ['GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n'])
  t.equal(parse(answer).statusLine, 'HTTP/1.1 200 OK')
})

t.test('headers over the limit get a 431 in the error shape', async (t) => {
  const { port } = await listening(t, 2000)
  const huge = `GET /health HTTP/1.1\r\nHost: localhost\r\nX-Filler: ${'a'.repeat(20_000)}\r\n\r\n`
  const { answer } = await exchange(port, [huge])
  const { statusLine, body } = parse(answer)
  t.equal(statusLine, 'HTTP/1.1 431 Request Header Fields Too Large')
  t.equal(body.code, 'HEADERS_TOO_LARGE')
  t.equal(body.statusCode, 431)
})

t.test('bytes that are not HTTP get a 400 in the error shape', async (t) => {
  const { port } = await listening(t, 2000)
  const { answer } = await exchange(port, ['HELLO THERE\r\n\r\n'])
  const { statusLine, body } = parse(answer)
  t.equal(statusLine, 'HTTP/1.1 400 Bad Request')
  t.same(body, {
    statusCode: 400,
    error: 'Bad Request',
    message: 'the request is not valid HTTP/1.1',
    code: 'MALFORMED_REQUEST',
    name: 'BadRequest',
  })
})

t.test('listenOptions checks the timeout often enough to act close to the limit', async (t) => {
  const options = (ms: number) => listenOptions(defaultConfig({ REQUEST_TIMEOUT_MS: ms }))
  t.equal(options(30_000).requestTimeout, 30_000)
  t.same(options(30_000).http, { requestTimeout: 30_000, connectionsCheckingInterval: 1000 })
  t.same(options(300).http, { requestTimeout: 300, connectionsCheckingInterval: 150 })
  t.same(options(0).http, { requestTimeout: 0, connectionsCheckingInterval: 50 })
  t.equal(options(0).return503OnClosing, true)
})
