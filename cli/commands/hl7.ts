import { readFileSync } from 'node:fs'
import { Hl7Message } from '@medplum/core'
import { Hl7Client } from '@medplum/hl7'
import type { Command } from 'commander'
import { readHl7Status } from '../../db/repositories/hl7-status.js'
import { withDatabase } from '../database.js'
import { CliError } from '../errors.js'
import type { CliIo } from '../io.js'

const ACK_TIMEOUT_MS = 30_000

/**
 * `hl7 send FILE --to HOST:PORT`: a real MLLP client (@medplum/hl7's) for a site's own integration
 * test, sending each message of the file in turn and printing each ACK; `hl7 status`: what the
 * ADT feed's message log holds.
 */
export function addHl7Command(program: Command, io: CliIo): void {
  const hl7 = program.command('hl7').description('the ADT feed (HL7 v2 over MLLP): send test messages, show the log')
  hl7
    .command('send')
    .description(
      'send the HL7 messages of FILE (each starts with an MSH line; LF, CRLF or CR line ends) and print each ACK',
    )
    .argument('<file>', 'a file of HL7 v2 messages')
    .requiredOption('--to <host:port>', 'the ADT listener (HL7_HOST:HL7_PORT)', hostPort)
    .action(async (file: string, opts: { to: { host: string; port: number } }) => {
      const failed = await send(messagesOf(file), opts.to, io)
      if (failed > 0) throw new CliError(`${failed} message(s) not accepted (AR or AE)`)
    })
  hl7
    .command('status')
    .description("the message log: how many messages by status (parked ones wait for an admin), the last one's time")
    .action(() => {
      const status = withDatabase(program, (db) => readHl7Status(db))
      for (const name of ['applied', 'ignored', 'parked', 'rejected', 'dismissed'])
        io.out(`${name}\t${status.byStatus[name] ?? 0}`)
      io.out(`last received\t${status.lastReceivedAt === null ? '-' : new Date(status.lastReceivedAt).toISOString()}`)
      io.out(`texts kept\t${status.textsKept}`)
    })
}

function hostPort(value: string): { host: string; port: number } {
  const match = /^(.+):(\d{1,5})$/.exec(value)
  const port = Number(match?.[2])
  if (!match || port < 1 || port > 65535) throw new CliError(`--to ${value}: expected HOST:PORT, e.g. 127.0.0.1:2575`)
  return { host: (match[1] as string).replace(/^\[(.*)\]$/, '$1'), port }
}

/** The file's messages: a new one starts at each MSH line; segments end with CR on the wire. */
function messagesOf(file: string): Hl7Message[] {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    throw new CliError(`${file}: ${(error as Error).message}`)
  }
  const segments = text.split(/\r\n|\r|\n/).filter((line) => line.trim() !== '')
  const messages: string[][] = []
  for (const segment of segments) {
    if (segment.startsWith('MSH')) messages.push([segment])
    else if (messages.length === 0) throw new CliError(`${file}: the first line is not an MSH segment`)
    else messages.at(-1)?.push(segment)
  }
  if (messages.length === 0) throw new CliError(`${file}: no HL7 message in it`)
  return messages.map((m) => Hl7Message.parse(m.join('\r')))
}

/**
 * The ACK of one message, or an error when none comes within ACK_TIMEOUT_MS. The timer is ours and
 * cleared on the answer: @medplum/hl7's own (sendAndWait's timeoutMs) keeps running after the ACK,
 * which held `hl7 send` open for 30 s after its last answer. On a timeout, closing the client (in
 * send) rejects the message still waiting.
 */
async function ackOf(client: Hl7Client, message: Hl7Message): Promise<Hl7Message> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ACK within ${ACK_TIMEOUT_MS / 1000} s`)), ACK_TIMEOUT_MS)
  })
  try {
    return await Promise.race([client.sendAndWait(message), timeout])
  } finally {
    clearTimeout(timer)
  }
}

async function send(messages: Hl7Message[], to: { host: string; port: number }, io: CliIo): Promise<number> {
  const client = new Hl7Client({ host: to.host, port: to.port, connectTimeout: 10_000 })
  let failed = 0
  try {
    for (const message of messages) {
      const ack = await ackOf(client, message).catch((error: unknown) => {
        throw new CliError(`${to.host}:${to.port}: ${(error as Error).message}`)
      })
      const code = ack.getSegment('MSA')?.getField(1)?.toString() ?? '?'
      if (code !== 'AA' && code !== 'CA') failed++
      io.out(ack.toString().replaceAll('\r', '\n'))
      io.out('')
    }
  } finally {
    await client.close()
  }
  return failed
}
