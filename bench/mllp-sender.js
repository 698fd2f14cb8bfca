// The sender of the ADT bench and of its floor (bench/adt.js, bench/adt-floor.js): one MLLP
// connection, one message at a time, its answer awaited; `admissionFeed` plays a side's turns.
// Both measure with this same sender, so what a message costs the sending side (a few string
// operations, no HL7 parser) is the same on both sides of the ratio, and the ratio compares the
// two servers alone.
import { createConnection } from 'node:net'

const START = '\x0b'
const END = '\x1c\r'

/**
 * The admission the bench sends as message `n` of sender `tag`: a new patient, a new bed, a new
 * encounter (each named by both, so no two senders of one run share one).
 */
export function admissionText(n, tag) {
  const at = '20260105103000'
  return [
    `MSH|^~\\&|BENCH|GENERAL|WARD|FS|${at}||ADT^A01^ADT_A01|${tag}-${n}|P|2.5.1`,
    `EVN|A01|${at}`,
    `PID|1||P-${tag}-${n}^^^GENERAL^MR||Doe^Jane`,
    `PV1|1|I|W1^R${n % 50}^${tag}-B${n}^bench||||DR1^Smith||||||||||||${tag}-E${n}`,
  ].join('\r')
}

/** Opens a connection; `send(text)` frames a message and resolves with the answer's text (unframed). */
export async function connectSender(port, host = '127.0.0.1') {
  const socket = createConnection({ port, host, noDelay: true })
  await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject))
  let buffered = ''
  let waiting = null
  socket.on('data', (chunk) => {
    buffered += chunk.toString('latin1')
    const end = buffered.indexOf(END)
    if (end < 0 || waiting === null) return
    const start = buffered.indexOf(START)
    const answer = buffered.slice(start + 1, end)
    buffered = buffered.slice(end + END.length)
    const { resolve } = waiting
    waiting = null
    resolve(answer)
  })
  const fail = (error) => {
    if (waiting === null) return
    const { reject } = waiting
    waiting = null
    reject(error)
  }
  socket.on('error', fail)
  socket.on('close', () => fail(new Error('the server closed the connection')))
  return {
    send(text) {
      return new Promise((resolve, reject) => {
        waiting = { resolve, reject }
        socket.write(`${START}${text}${END}`, 'latin1')
      })
    },
    close() {
      socket.destroy()
    },
  }
}

/** The control id (MSA-2) an answer acknowledges with AA, or null when it is not an AA. */
export function acceptedControlId(answer) {
  const msa = answer.split('\r').find((segment) => segment.startsWith('MSA|'))
  const fields = msa?.split('|') ?? []
  return fields[1] === 'AA' ? (fields[2] ?? '') : null
}

/**
 * One connection kept over many turns, each admission new (its number goes on from turn to turn),
 * each ACK awaited. `turn(seconds)` sends for that long and answers `{ total, non2xx, errors }` as
 * an HTTP load does (non2xx: answers other than an AA of the message sent, the first kept in
 * `refused`); the turns' round trips (ms) and seconds add up in `latencies` and `seconds`.
 * `warm(seconds)` sends the same way and records nothing.
 */
export async function admissionFeed(port, tag) {
  const client = await connectSender(port)
  let n = 0
  const feed = {
    latencies: [],
    seconds: 0,
    refused: null,
    turn: (seconds) => send(seconds, true),
    warm: (seconds) => send(seconds, false),
    close: () => client.close(),
  }
  async function send(seconds, record) {
    let total = 0
    let non2xx = 0
    const started = performance.now()
    const end = started + seconds * 1000
    while (performance.now() < end) {
      const sent = performance.now()
      const answer = await client.send(admissionText(n, tag))
      if (record) feed.latencies.push(performance.now() - sent)
      if (acceptedControlId(answer) !== `${tag}-${n}`) {
        non2xx++
        feed.refused ??= answer
      }
      n++
      total++
    }
    if (record) feed.seconds += (performance.now() - started) / 1000
    return { total, non2xx, errors: 0 }
  }
  return feed
}
