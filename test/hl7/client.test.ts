import { once } from 'node:events'
import { createServer, type Socket } from 'node:net'
import { type Test, test } from 'tap'
import { ackOf, frame, frameSplitter, openRawSocket } from './client.js'

const ack = (control: string) =>
  `MSH|^~\\&|WARD|FS|HIS|GENERAL|20260105103000||ACK^A01|${control}|P|2.5.1\rMSA|AA|${control}|applied`

/** A server that answers each connection with `writes`, each in one write, flushed one after the other. */
async function serverWriting(t: Test, writes: Buffer[]) {
  const sockets: Socket[] = []
  const server = createServer(async (socket) => {
    sockets.push(socket)
    socket.setNoDelay(true)
    for (const bytes of writes) {
      socket.write(bytes)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => {
    for (const socket of sockets) socket.destroy()
    server.close()
  })
  return (server.address() as { port: number }).port
}

test('two ACKs arriving in one read are two ACKs; one split over two reads is one', async (t) => {
  const two = Buffer.concat([frame(ack('A1')), frame(ack('A2'))])
  const third = frame(ack('A3'))
  const port = await serverWriting(t, [two, third.subarray(0, 20), third.subarray(20)])
  const raw = await openRawSocket(port)
  t.teardown(() => raw.socket.destroy())
  const acks = await Promise.race([
    raw.next(3),
    new Promise<string[]>((resolve) => setTimeout(() => resolve([...raw.acks]), 10_000).unref()),
  ])
  t.same(
    acks.map((a) => ackOf(a).control),
    ['A1', 'A2', 'A3'],
  )
})

test('the splitter: bytes between frames are skipped, an end block split over reads is found', async (t) => {
  const split = frameSplitter()
  t.same(split(Buffer.from('\r\n\x0bMSH|one\x1c')), [])
  t.same(split(Buffer.from('\r\x0bMSH|two\x1c\r\x0bMSH|th')), ['MSH|one', 'MSH|two'])
  t.same(split(Buffer.from('ree\x1c\r')), ['MSH|three'])
})
