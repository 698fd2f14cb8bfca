import { once } from 'node:events'
import { type AddressInfo, createConnection, createServer, type Socket } from 'node:net'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t, { type Test } from 'tap'
import { bearer, buildTestApp } from '../helper.js'

// The requests read in one turn of the event loop are checked once, after the last of them arrived
// (plugins/db.ts): a revocation committed by another connection between two of them must refuse
// the later one. These tests make three sockets readable in one turn, in order (a request, a
// socket whose reading commits the revocation, the victim's request): the server reads them in
// that order, as the kernel made them ready.

async function connect(port: number): Promise<Socket> {
  const socket = createConnection({ port, host: '127.0.0.1' })
  await once(socket, 'connect')
  return socket
}

/** The status code of the first answer on `socket` (the status line is enough, also for a stream). */
function statusOf(socket: Socket): Promise<number> {
  return new Promise((resolve, reject) => {
    let text = ''
    socket.setEncoding('latin1')
    socket.on('data', function read(chunk: string) {
      text += chunk
      const line = /^HTTP\/1\.1 (\d{3})/.exec(text)
      if (line) {
        socket.off('data', read)
        resolve(Number(line[1]))
      }
    })
    socket.once('error', reject)
  })
}

const get = (path: string, token?: string) =>
  `GET ${path} HTTP/1.1\r\nhost: test\r\n${token ? `authorization: Bearer ${token}\r\n` : ''}\r\n`

/**
 * A server (HTTP on `port`) and a trigger: bytes on the trigger's socket run `whenRead` in the
 * server's process, between the reads of the sockets written before and after it.
 */
async function socketsWithTrigger(t: Test, port: number, turn: () => number, whenRead: () => void) {
  const triggeredIn: number[] = []
  const trigger = createServer((socket) =>
    socket.on('data', () => {
      triggeredIn.push(turn())
      whenRead()
    }),
  )
  trigger.listen(0, '127.0.0.1')
  await once(trigger, 'listening')
  const [first, pull, victim] = await Promise.all([
    connect(port),
    connect((trigger.address() as AddressInfo).port),
    connect(port),
  ])
  // Let the server accept all three before anything is written.
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.teardown(() => {
    for (const socket of [first, pull, victim]) socket.destroy()
    trigger.close()
  })
  return { first, pull, victim, triggeredIn }
}

/** Counts the turns of the event loop (one more at each check phase) while the test runs. */
function turns(t: Test) {
  let turn = 0
  let stopped = false
  const tick = () => {
    turn++
    if (!stopped) setImmediate(tick)
  }
  setImmediate(tick)
  t.teardown(() => {
    stopped = true
  })
  return () => turn
}

async function server(t: Test) {
  const path = join(t.testdir(), 'turn.db')
  const { app, tokens } = await buildTestApp(t, { DATABASE_PATH: path })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const cli = new BetterSqlite3(path) // another connection, as the CLI's
  t.teardown(() => cli.close())
  const port = (app.server.address() as AddressInfo).port
  // The turn in which each request was read (Node's 'request' event, as the parser finishes it).
  const turn = turns(t)
  const readIn: number[] = []
  app.server.on('request', () => readIn.push(turn()))
  return { app, tokens, cli, port, readIn, turn }
}

type Server = Awaited<ReturnType<typeof server>>

/**
 * Writes `first`, a byte on the trigger's socket (which runs `commit` through the CLI's connection)
 * and `late`, in one synchronous run: the kernel has the three sockets readable, in this order,
 * when the server's turn reads them. Answers the two requests' status codes, after checking that
 * the three were read in one turn (else the test would mean nothing).
 */
async function betweenTwoRequests(t: Test, s: Server, commit: () => void, first: string, late: string) {
  const sockets = await socketsWithTrigger(t, s.port, s.turn, commit)
  const answers = Promise.all([statusOf(sockets.first), statusOf(sockets.victim)])
  sockets.first.write(first)
  sockets.pull.write('x')
  sockets.victim.write(late)
  const statuses = await answers
  t.equal(sockets.triggeredIn.length, 1)
  const [turn] = sockets.triggeredIn
  t.same([s.readIn.at(-2), turn, s.readIn.at(-1)], [turn, turn, turn], 'all three read in one turn')
  return statuses
}

const revoke = (s: Server, tokenId: string) => () =>
  s.cli.prepare('UPDATE tokens SET revoked_at = ? WHERE id = ?').run(Date.now(), tokenId)

t.test('a token revoked between two requests of one turn refuses the later one', async (t) => {
  const s = await server(t)
  const victim = s.app.tokens.create({ account: 'nurse-x', role: 'read' })
  const path = '/ward-occupants?$limit=1'
  // Remembered as accepted first: the refusal must come from the file, not from a cold cache.
  const warm = await s.app.inject({ url: path, headers: bearer(victim.token) })
  t.equal(warm.statusCode, 200)
  const [first, late] = await betweenTwoRequests(
    t,
    s,
    revoke(s, victim.info.tokenId),
    get(path, s.tokens.read),
    get(path, victim.token),
  )
  t.equal(first, 200, 'another token is not concerned')
  t.equal(late, 401, 'the request that came after the revocation is refused')
})

t.test("a stream's ticket whose token was revoked between two requests of one turn is refused", async (t) => {
  const s = await server(t)
  const victim = s.app.tokens.create({ account: 'nurse-x', role: 'read' })
  const asked = await s.app.inject({ method: 'POST', url: '/events/tickets', headers: bearer(victim.token) })
  const { ticket } = asked.json()
  const [first, late] = await betweenTwoRequests(
    t,
    s,
    revoke(s, victim.info.tokenId),
    get('/beds', s.tokens.read),
    get(`/events?ticket=${ticket}`),
  )
  t.equal(first, 200)
  t.equal(late, 401, 'the ticket is refused: its token was revoked before the stream was asked')
})

t.test('an account blocked between two requests of one turn is refused on the later one', async (t) => {
  const s = await server(t)
  const block = () =>
    s.cli.prepare('INSERT INTO blocked_accounts (account, blocked_at) VALUES (?, ?)').run('nurse-all', Date.now())
  // nurse-all's token is the write token.
  const [first, late] = await betweenTwoRequests(t, s, block, get('/beds', s.tokens.read), get('/beds', s.tokens.write))
  t.equal(first, 200)
  t.equal(late, 401, "the blocked account's request is refused")
})

t.test("the read snapshot a turn's requests read in is given back in that turn", async (t) => {
  const { app, tokens } = await server(t)
  const answer = await app.inject({ url: '/beds', headers: bearer(tokens.read) })
  t.equal(answer.statusCode, 200)
  // A timer runs in the next turn, before its requests: no read lock of the last turn is held.
  await new Promise((resolve) => setTimeout(resolve, 1))
  t.notOk(app.db.inTransaction, 'no read transaction left open into the next turn')
})
