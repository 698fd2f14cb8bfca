import type { IncomingMessage } from 'node:http'
import { PassThrough } from 'node:stream'
import t from 'tap'
import { discardRest, hasUnreadBody } from '../../plugins/lingering-close.js'

function body() {
  return new PassThrough() as PassThrough & IncomingMessage
}

t.test('the rest of a refused body is read until it ends', async (t) => {
  const raw = body()
  let done = false
  const drained = discardRest(raw, { maxBytes: 1024, maxMs: 5_000 }).then(() => {
    done = true
  })
  raw.write(Buffer.alloc(512))
  await new Promise((resolve) => setImmediate(resolve))
  t.notOk(done, 'still reading while the client sends within the bound')
  raw.end(Buffer.alloc(100))
  await drained
  t.ok(done)
})

t.test('reading stops at the byte bound, and at the time bound', async (t) => {
  const big = body()
  const bytes = discardRest(big, { maxBytes: 1024, maxMs: 5_000 })
  big.write(Buffer.alloc(2048))
  await bytes
  t.equal(big.listenerCount('data'), 0, 'no reader left behind')
  const slow = body()
  const started = Date.now()
  await discardRest(slow, { maxBytes: 1024, maxMs: 50 })
  t.ok(Date.now() - started >= 45, 'waited for the time bound')
  t.equal(slow.listenerCount('end'), 0)
})

t.test('only a body still arriving is waited for', async (t) => {
  const arriving = body()
  t.ok(hasUnreadBody(arriving), 'not yet ended')
  const read = body()
  read.resume()
  read.end('{}')
  await new Promise((resolve) => read.once('end', resolve))
  t.notOk(hasUnreadBody(read), 'read to its end (an injected request), though Node never parsed it')
  const parsed = body()
  Object.assign(parsed, { complete: true })
  t.notOk(hasUnreadBody(parsed), "Node's parser has it all")
})
