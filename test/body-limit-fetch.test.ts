import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { BOOTSTRAP_TOKEN_FILE } from '../start-server.js'
import { startServer, stopServer } from './reliability/server-process.js'

const FIVE_MIB = 5 * 1024 * 1024
const ATTEMPTS = Number(process.env.BODY_LIMIT_ATTEMPTS ?? 50)
const WRITES = new Set(['post', 'put', 'patch', 'delete'])

/**
 * Plain fetch (undici, no `Expect: 100-continue`) uploading a body over the limit while the server
 * refuses it: every attempt must read the 413, none may end in EPIPE or ECONNRESET.
 */
t.test('fetch uploading 5 MiB to every write route gets the 413, every time', async (t) => {
  // Its own process, as in real use: in one event loop with the client the race never shows.
  const dir = mkdtempSync(join(tmpdir(), 'body-limit-'))
  const server = await startServer({ DATABASE_PATH: join(dir, 'facility.db') })
  t.teardown(async () => {
    await stopServer(server)
    rmSync(dir, { recursive: true, force: true })
  })
  const base = server.base
  // Without a terminal the first start leaves its admin token beside the database.
  const token = readFileSync(join(dir, BOOTSTRAP_TOKEN_FILE), 'utf8').trim()
  t.ok(token, 'the first start made an admin token')

  const doc = (await (await fetch(`${base}/openapi.json`)).json()) as { paths: Record<string, object> }
  const id = '0123456789abcdef01234567'
  const routes = Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.keys(ops)
      .filter((method) => WRITES.has(method))
      .map((method) => ({ method: method.toUpperCase(), url: `${base}${path.replace(/\{[^}]+\}/g, id)}` })),
  )
  t.ok(routes.length >= 8, `the write routes: ${routes.map((r) => `${r.method} ${r.url.slice(base.length)}`)}`)

  const body = new Uint8Array(FIVE_MIB).fill(0x20)
  // A stream is sent chunked, without Content-Length: the limit is then found only mid-body.
  const chunked = () =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (let sent = 0; sent < FIVE_MIB; sent += 65_536) controller.enqueue(body.subarray(sent, sent + 65_536))
        controller.close()
      },
    })
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
  const first = routes[0] as (typeof routes)[number]
  for (const route of [...routes, { ...first, chunked: true }]) {
    const outcomes = new Map<string, number>()
    for (let i = 0; i < ATTEMPTS; i++) {
      const init: RequestInit & { duplex?: 'half' } =
        'chunked' in route
          ? { method: route.method, headers, body: chunked(), duplex: 'half' }
          : { method: route.method, headers, body }
      const outcome = await fetch(route.url, init).then(
        async (res) => `${res.status} ${((await res.json()) as { code?: string }).code}`,
        (error: Error & { cause?: { code?: string } }) => `failed: ${error.cause?.code ?? error.message}`,
      )
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1)
    }
    t.same(
      [...outcomes],
      [['413 FST_ERR_CTP_BODY_TOO_LARGE', ATTEMPTS]],
      `${route.method} ${route.url.slice(base.length)}${'chunked' in route ? ' (chunked)' : ''}`,
    )
  }
})
