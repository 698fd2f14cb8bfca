import { once } from 'node:events'
import { connect } from 'node:net'
import t from 'tap'
import { buildTestApp } from '../helper.js'
import { type Call, footprint, writeCases } from '../routes/idempotency-cases.js'
import { until } from './fault-helpers.js'

/** Sends a whole request on a fresh connection and closes it at once, before any answer: a tablet losing Wi-Fi. */
async function sendAndCut(port: number, method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const socket = connect(port, '127.0.0.1')
  await once(socket, 'connect')
  const payload = body === undefined ? '' : JSON.stringify(body)
  const head = [`${method} ${path} HTTP/1.1`, 'Host: ward', `Content-Length: ${Buffer.byteLength(payload)}`]
  if (body !== undefined) head.push('Content-Type: application/json')
  for (const [name, value] of Object.entries(headers)) head.push(`${name}: ${value}`)
  await new Promise<void>((resolve) => socket.write(`${head.join('\r\n')}\r\n\r\n${payload}`, () => resolve()))
  socket.destroy()
}

t.test('a retry after a connection cut mid-request gets the answer of the change that was made, once', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  const base = `http://127.0.0.1:${port}`
  const auth = { authorization: `Bearer ${tokens.write}` }
  const request = (method: string, url: string, payload?: unknown, key?: string) =>
    fetch(`${base}${url}`, {
      method,
      headers: {
        ...auth,
        ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
        ...(key === undefined ? {} : { 'idempotency-key': key }),
      },
      ...(payload === undefined ? {} : { body: JSON.stringify(payload) }),
    })
  const plain: Call = async (method, url, payload) => {
    const res = await request(method, url, payload)
    return { status: res.status, body: await res.text() }
  }

  for (const [i, c] of writeCases(app.db).entries()) {
    const url = await c.prepare(plain)
    const key = `cut-${i}`
    const before = footprint(app.db)
    await sendAndCut(port, c.method, url, { ...auth, 'idempotency-key': key }, c.payload)
    // The oracle (plain SQL) says when the cut request's change is there; the client never heard.
    await until(() => JSON.stringify(footprint(app.db)) !== JSON.stringify(before))
    const changed = footprint(app.db)
    let retry = await request(c.method, url, c.payload, key)
    // Still being answered to the gone client: a real client retries after Retry-After.
    while (
      retry.status === 409 &&
      ((await retry.clone().json()) as { code?: string }).code === 'IDEMPOTENCY_KEY_IN_FLIGHT'
    )
      retry = await request(c.method, url, c.payload, key)
    t.equal(retry.status, 200, `${c.name}: the retry is answered 200`)
    t.equal(retry.headers.get('idempotent-replayed'), 'true', `${c.name}: with the stored answer`)
    const body = (await retry.json()) as { id?: unknown }
    t.ok(typeof body.id === 'string', `${c.name}: the record`)
    t.same(footprint(app.db), changed, `${c.name}: made once: no second change, audit entry or feed event`)
    const stored = app.db.prepare('SELECT body FROM idempotency_keys WHERE key = ?').pluck().get(key)
    t.same(JSON.parse(stored as string), body, `${c.name}: the answer kept with the change`)
  }
})
