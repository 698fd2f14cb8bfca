import { Hl7Message } from '@medplum/core'
import iconv from 'iconv-lite'
import { test } from 'tap'
import { readAdt } from '../../domain/adt-message.js'
import { createAnswerer } from '../../hl7/answer.js'
import { charsetRefusal, type DecodedFrame, decodeFrame, encodeAck } from '../../hl7/charset.js'
import { adtSettings } from '../../hl7/index.js'
import { RefusalLog } from '../../hl7/refusals.js'
import { hl7Problems } from '../../lib/hl7-settings.js'
import { bearer, buildTestApp } from '../helper.js'
import { ackOf, openRawSocket } from './client.js'
import { adt } from './messages.js'
import { occupants } from './ward.js'

const UTF8 = 'UNICODE UTF-8'

/** An A01 naming `provider` in PV1-7, with MSH-18 `charset` (empty: none). */
function admission(provider: string, charset: string, control = 'C-1'): string {
  const text = adt({ event: 'A01', control, encounter: `E-${control}`, bed: 'B1', facility: 'A', provider })
  return charset === '' ? text : text.replace(`|${control}|P|2.5.1`, `|${control}|P|2.5.1||||||${charset}`)
}

const settings = {
  defaultFacility: null,
  patientIdType: 'MR',
  timeZone: 'UTC',
  transferOnA08: true,
}

function providerOf(decoded: DecodedFrame): string | null {
  if (!('text' in decoded)) throw new Error(`rejected: ${decoded.rejection.reason}`)
  const reading = readAdt(Hl7Message.parse(decoded.text), settings)
  return reading.kind === 'ward' ? reading.message.provider : null
}

function rejectionOf(decoded: DecodedFrame): string {
  if ('text' in decoded) throw new Error('decoded, not rejected')
  if (decoded.rejection.field !== 'MSH-18') throw new Error('not MSH-18')
  return decoded.rejection.reason
}

test('the same names in ISO 8859-1 and in UTF-8 read the same', async (t) => {
  for (const name of ['Müller', 'Ørsted', 'Çelik', 'Ñúñez']) {
    const latin1 = iconv.encode(admission(name, '8859/1'), 'iso-8859-1')
    t.equal(providerOf(decodeFrame(latin1, UTF8)), name, `${name} in 8859/1`)
    t.equal(latin1.length, admission(name, '8859/1').length, 'one byte a character: truly Latin-1 bytes')
    t.equal(providerOf(decodeFrame(Buffer.from(admission(name, UTF8)), UTF8)), name, `${name} in UTF-8`)
    t.equal(providerOf(decodeFrame(Buffer.from(admission(name, '')), UTF8)), name, `${name}, MSH-18 empty: HL7_CHARSET`)
    t.equal(providerOf(decodeFrame(latin1.subarray(0), '8859/1')), name, 'HL7_CHARSET 8859/1 too')
    const undeclared = iconv.encode(admission(name, ''), 'iso-8859-1')
    t.equal(providerOf(decodeFrame(undeclared, '8859/1')), name, 'MSH-18 empty, HL7_CHARSET=8859/1')
    t.match(
      rejectionOf(decodeFrame(undeclared, UTF8)),
      /not UNICODE UTF-8 text \(HL7_CHARSET; MSH-18 is empty\)/,
      'Latin-1 bytes read as UTF-8: AR, not a replacement character',
    )
  }
  t.equal(providerOf(decodeFrame(Buffer.from(admission('Müller', 'unicode utf-8')), UTF8)), 'Müller', 'any case')
})

test('Łukasz: UTF-8 and 8859/2 carry it; 8859/1 cannot, and UTF-8 bytes declared 8859/1 get AR', async (t) => {
  t.equal(providerOf(decodeFrame(Buffer.from(admission('Łukasz', UTF8)), '8859/1')), 'Łukasz')
  t.equal(providerOf(decodeFrame(iconv.encode(admission('Łukasz', '8859/2'), 'iso-8859-2'), UTF8)), 'Łukasz')
  // A sender that writes its UTF-8 text under 8859/1: Ł is C5 81, and 0x81 is no character of ISO 8859-1.
  t.match(
    rejectionOf(decodeFrame(Buffer.from(admission('Łukasz', '8859/1')), UTF8)),
    /not 8859\/1 text as MSH-18 declares: .*0x80 to 0x9F/,
  )
  t.equal(iconv.encode('Łukasz', 'iso-8859-1').toString('latin1'), '?ukasz', 'not representable in Latin-1 at all')
})

test('the euro sign: 0xA4 in 8859/15; windows-1252 text (0x80) declared Latin-1 gets AR', async (t) => {
  const euro = iconv.encode(admission('€uro', '8859/15'), 'iso-8859-15')
  t.equal(euro[euro.indexOf('uro^Smith') - 1], 0xa4)
  t.equal(providerOf(decodeFrame(euro, UTF8)), '€uro')
  const sameBytes = Buffer.from(euro.toString('latin1').replace('8859/15', '8859/1'), 'latin1')
  t.equal(providerOf(decodeFrame(sameBytes, UTF8)), '¤uro', 'the same byte is ¤ in 8859/1, as the set says')
  const cp1252 = iconv.encode(admission('€uro', '8859/1'), 'windows-1252')
  t.match(rejectionOf(decodeFrame(cp1252, UTF8)), /0x80 to 0x9F.*windows-1252/)
})

test('invalid UTF-8 gets AR naming MSH-18, never a replacement character', async (t) => {
  const [before = '', after = ''] = admission('MXller', UTF8).split('X')
  for (const bad of [
    [0xfc],
    [0xc3, 0x28],
    [0xe2, 0x82],
    [0xed, 0xa0, 0x80],
    [0xf8, 0x88, 0x80, 0x80, 0x80],
    [0xc0, 0xaf],
  ]) {
    const bytes = Buffer.concat([Buffer.from(before), Buffer.from(bad), Buffer.from(after)])
    t.match(rejectionOf(decodeFrame(bytes, UTF8)), /not UNICODE UTF-8 text as MSH-18 declares/, bad.join(' '))
  }
  // An encoded U+FFFD is a character the sender wrote, not a decoding step's.
  t.equal(providerOf(decodeFrame(Buffer.from(admission('M\uFFFDller', UTF8)), UTF8)), 'M\uFFFDller')
})

test('ASCII declared: bytes over 0x7F get AR; ASCII text reads', async (t) => {
  t.equal(providerOf(decodeFrame(Buffer.from(admission('Muller', 'ASCII')), UTF8)), 'Muller')
  t.match(
    rejectionOf(decodeFrame(iconv.encode(admission('Müller', 'ASCII'), 'latin1'), UTF8)),
    /byte 0xfc at \d+ is not ASCII/,
  )
})

test('a set the service does not read gets AR naming MSH-18', async (t) => {
  for (const name of ['EBCDIC', 'UNICODE UTF-16', 'UNICODE', '8859/12', 'BIG-5', 'ISO IR87', 'UTF-8', 'latin1']) {
    const decoded = decodeFrame(Buffer.from(admission('Muller', name)), UTF8)
    t.match(rejectionOf(decoded), new RegExp(`character set ${name} \\(MSH-18\\) is not one`), name)
    if (!('text' in decoded)) t.match(decoded.headText, /^MSH\|.*\|C-1\|/)
  }
  t.match(rejectionOf(decodeFrame(Buffer.from(admission('Muller', '8859/1~ISO IR87')), UTF8)), /more than one/)
  t.match(
    rejectionOf(decodeFrame(Buffer.from(admission('Muller', '8859/ü')), UTF8)),
    /MSH-18 \(character set\) is not ASCII/,
  )
})

test('no byte of any set the service reads becomes a replacement character', async (t) => {
  const [before = '', after = ''] = admission('MXller', UTF8).split('X')
  for (const name of [
    'ASCII',
    UTF8,
    ...Array.from({ length: 16 }, (_, i) => `8859/${i + 1}`).filter((n) => n !== '8859/12'),
  ]) {
    const head = Buffer.from(before.replace(`||||||${UTF8}`, `||||||${name}`))
    let read = 0
    for (let byte = 0; byte < 256; byte++) {
      if (
        byte === 0x0d ||
        byte === 0x0a ||
        byte === 0x7c ||
        byte === 0x5e ||
        byte === 0x5c ||
        byte === 0x26 ||
        byte === 0x7e
      )
        continue
      const decoded = decodeFrame(Buffer.concat([head, Buffer.from([byte]), Buffer.from(after)]), UTF8)
      if ('text' in decoded) {
        read++
        if (decoded.text.includes('\uFFFD')) t.fail(`${name}: byte ${byte} became U+FFFD`)
      }
    }
    t.ok(read >= 90, `${name}: ${read} bytes read, the rest refused`)
  }
})

test('the ACK is written in the message’s set and names it in MSH-18; the refusal is ASCII', async (t) => {
  const latin1 = iconv.encode(admission('Müller', '8859/1').replace('|HIS|', '|HÔPITAL|'), 'iso-8859-1')
  const decoded = decodeFrame(latin1, UTF8)
  if (!('text' in decoded)) throw new Error('rejected')
  t.equal(decoded.charset, '8859/1')
  const ackText = (await import('../../hl7/acks.js')).ackFor(Hl7Message.parse(decoded.text), 'AA', 'applied')
  const bytes = encodeAck(ackText, decoded.charset)
  t.ok(bytes.includes(Buffer.from([0xd4])), 'Ô as one Latin-1 byte')
  t.equal(iconv.decode(bytes, 'iso-8859-1'), ackText)
  t.equal(ackText.split('\r')[0]?.split('|')[17], '8859/1', "the ACK's MSH-18")
  t.same(encodeAck('HÔ€', UTF8), Buffer.from('HÔ€'))
  t.same(encodeAck('HÔ€', '8859/15'), Buffer.from([0x48, 0xd4, 0xa4]))
  t.same(encodeAck('HÔ', 'ASCII'), Buffer.from('H?'))

  const refused = decodeFrame(Buffer.concat([latin1.subarray(0, 20), Buffer.from([0x81]), latin1.subarray(20)]), UTF8)
  if ('text' in refused) throw new Error('decoded')
  const ar = charsetRefusal(refused.rejection, refused.headText)
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ASCII is the check
  t.match(ar, /^[\x00-\x7f]*$/, 'ASCII only')
  t.match(ackOf(ar), { code: 'AR', control: 'C-1', text: /not 8859\/1 text/ })
  t.match(ackOf(ar).err, /^ERR\|MSH\^1\^18\^207/)
  t.equal(ar.split('\r')[0]?.split('|')[17], undefined, 'no MSH-18: the AR is ASCII')
  const headless = decodeFrame(Buffer.from('EVN|A01\rMSH|^~\\&'), 'EBCDIC')
  if ('text' in headless) throw new Error('decoded')
  t.match(ackOf(charsetRefusal(headless.rejection, headless.headText)), { code: 'AR', control: '' })
})

test('HL7_CHARSET and HL7_PROCESSING_IDS are checked at start', async (t) => {
  const { config } = await buildTestApp(t)
  t.same(hl7Problems(config), [])
  t.same(hl7Problems({ ...config, HL7_CHARSET: '8859/15', HL7_PROCESSING_IDS: 'P,T' }), [])
  t.match(hl7Problems({ ...config, HL7_CHARSET: 'latin1' }), [['HL7_CHARSET', /is not a character set/]])
  t.match(hl7Problems({ ...config, HL7_PROCESSING_IDS: 'P,X' }), [['HL7_PROCESSING_IDS', /P, D, T/]])
  t.match(hl7Problems({ ...config, HL7_PROCESSING_IDS: ' , ' }), [['HL7_PROCESSING_IDS', /P, D, T/]])
})

// How the listener calls it: bytes -> decodeFrame -> the answerer -> encodeAck (or charsetRefusal).
test('through the service: a Latin-1 admission is stored as Müller, invalid bytes are refused', async (t) => {
  const { app, tokens, config } = await buildTestApp(t)
  const answer = createAnswerer({
    log: app.hl7.messages,
    settings: adtSettings(config),
    senders: new Map(),
    refusals: new RefusalLog(app.log),
    logger: app.log,
  })
  async function receive(bytes: Buffer): Promise<string> {
    const decoded = decodeFrame(bytes, config.HL7_CHARSET)
    const ack =
      'text' in decoded
        ? await answer(Hl7Message.parse(decoded.text))
        : charsetRefusal(decoded.rejection, decoded.headText)
    return iconv.decode(encodeAck(ack, 'text' in decoded ? decoded.charset : 'ASCII'), 'latin1')
  }
  t.match(ackOf(await receive(iconv.encode(admission('Müller', '8859/1'), 'iso-8859-1'))), {
    code: 'AA',
    text: 'applied',
  })
  const broken = Buffer.from(admission('MXller', UTF8, 'C-2').replace('B1', 'B2'))
  broken[broken.indexOf('X')] = 0xfc
  t.match(ackOf(await receive(broken)), { code: 'AR', control: 'C-2', err: /MSH\^1\^18/ })
  t.same(
    (await occupants(app, tokens.admin)).map((o) => o.provider),
    ['Müller'],
    'stored as Müller; the invalid one not at all',
  )
})

test('over the listener: a Latin-1 admission is applied as Müller, its ACK in Latin-1; invalid bytes get AR and leave nothing', async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0 })
  const raw = await openRawSocket(app.hl7.port as number)
  t.teardown(() => raw.socket.destroy())
  const frame = (bytes: Buffer) => Buffer.concat([Buffer.from([0x0b]), bytes, Buffer.from([0x1c, 0x0d])])
  // The sender's own name in MSH-4 is Latin-1 too: the ACK echoes it, in the sender's set.
  const latin1 = iconv.encode(admission('Müller', '8859/1').replace('|GENERAL|', '|Köln|'), 'iso-8859-1')
  const received: Buffer[] = []
  raw.socket.on('data', (chunk: Buffer) => received.push(chunk))
  raw.socket.write(frame(latin1))
  const [ack = ''] = await raw.next(1)
  t.match(ackOf(ack), { code: 'AA', control: 'C-1', text: 'applied' })
  const bytes = Buffer.concat(received)
  t.ok(bytes.includes(Buffer.from('8859/1')), 'the ACK names its set in MSH-18')
  t.ok(bytes.includes(Buffer.from([0xf6])), 'ö written as the Latin-1 byte 0xF6')
  t.same(
    (await occupants(app, tokens.admin)).map((o) => o.provider),
    ['Müller'],
    'stored as Müller, never as M\uFFFDller',
  )
  const broken = Buffer.from(admission('MXller', UTF8, 'C-2').replace('B1', 'B2'))
  broken[broken.indexOf('X')] = 0xfc
  raw.socket.write(frame(broken))
  const [, refused = ''] = await raw.next(2)
  t.match(ackOf(refused), { code: 'AR', control: 'C-2', err: /^ERR\|MSH\^1\^18\^207/ })
  t.equal((await occupants(app, tokens.admin)).length, 1, 'nothing applied from the invalid bytes')
  const res = await app.inject({ method: 'GET', url: '/hl7/messages', headers: bearer(tokens.admin) })
  t.same(
    res.json().hl7Messages.map((m: { controlId: string }) => m.controlId),
    ['C-1'],
    'the unreadable frame is not logged',
  )
})
