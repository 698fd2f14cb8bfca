import { connect, type Socket } from 'node:net'
import Client, { type HL7Version, Message } from 'node-hl7-client'

/**
 * A real MLLP client (node-hl7-client, not the listener's code): one connection, messages sent one
 * at a time, each ACK awaited before the next, as interface engines send.
 */
export interface Sender {
  /** Sends one message and resolves with the ACK's text. */
  send(text: string): Promise<string>
  close(): Promise<void>
}

export async function openSender(port: number, version: HL7Version = '2.5.1', host = '127.0.0.1'): Promise<Sender> {
  const client = new Client({ host, version })
  let waiting: ((ack: string) => void) | null = null
  const connection = client.createConnection(
    { port, version, waitAck: true, maxConnectionAttempts: 3 },
    async (res) => {
      const resolve = waiting
      waiting = null
      resolve?.(res.getMessage().toString())
    },
  )
  // Sent to before it is connected, the library opens a second socket and leaves the first one
  // open: a connection the listener counts against HL7_MAX_CONNECTIONS. An engine connects first.
  await new Promise<void>((resolve, reject) => {
    connection.once('connect', () => resolve())
    connection.once('client.error', reject)
  })
  return {
    send(text: string) {
      return new Promise<string>((resolve, reject) => {
        waiting = resolve
        connection.sendMessage(new Message({ text })).catch(reject)
      })
    },
    async close() {
      await connection.close()
    },
  }
}

/** MSA-1 and MSA-2 of an ACK, and its ERR segment if any. */
export function ackOf(ack: string): { code: string; control: string; text: string; err: string | null } {
  const segments = ack.split(/\r\n|\r|\n/)
  const msa = (segments.find((s) => s.startsWith('MSA|')) ?? '').split('|')
  return {
    code: msa[1] ?? '',
    control: msa[2] ?? '',
    text: msa[3] ?? '',
    err: segments.find((s) => s.startsWith('ERR|')) ?? null,
  }
}

/**
 * The frames in a stream of bytes, however they are cut into reads: each complete one's text as it
 * ends (several in one read, or one over many), the rest kept for the next read.
 */
export function frameSplitter(): (data: Buffer) => string[] {
  let pending = Buffer.alloc(0)
  return (data) => {
    pending = Buffer.concat([pending, data])
    const frames: string[] = []
    for (;;) {
      const start = pending.indexOf(0x0b)
      const end = start < 0 ? -1 : pending.indexOf(Buffer.from([0x1c, 0x0d]), start + 1)
      if (end < 0) break
      frames.push(pending.subarray(start + 1, end).toString('utf8'))
      pending = pending.subarray(end + 2)
    }
    return frames
  }
}

/**
 * A raw socket for what no client does on purpose: frames split over many writes, several frames
 * in one write, garbage. ACKs are read with frameSplitter (two ACKs in one read are two).
 */
export async function openRawSocket(
  port: number,
  /** The client's own address (127.0.0.2 is this machine too, seen as another client). */
  localAddress = '127.0.0.1',
): Promise<{ socket: Socket; acks: string[]; next(n: number): Promise<string[]> }> {
  const socket = connect({ port, host: '127.0.0.1', localAddress })
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject))
  socket.setNoDelay(true)
  const split = frameSplitter()
  const acks: string[] = []
  const listeners: (() => void)[] = []
  socket.on('data', (data: Buffer) => {
    acks.push(...split(data))
    for (const listener of listeners.splice(0)) listener()
  })
  socket.on('error', () => {})
  return {
    socket,
    acks,
    next: (n) =>
      new Promise((resolve) => {
        const check = () => (acks.length >= n ? resolve(acks.slice(0, n)) : listeners.push(check))
        check()
      }),
  }
}

export function frame(text: string): Buffer {
  return Buffer.concat([Buffer.from([0x0b]), Buffer.from(text, 'utf8'), Buffer.from([0x1c, 0x0d])])
}
