import { Hl7Message, Hl7Segment } from '@medplum/core'
import { test } from 'tap'
import { type AckCode, type AckError, ackFor, ackForUnparseable, escapeText, hl7Now } from '../../hl7/acks.js'
import { adt } from './messages.js'

// The ACK is written as text (hl7/acks.ts); it must be what the library's buildAck, with MSA-3 set
// and the ERR segment added, printed: this is how it was built before, kept here to compare with.
function libraryAck(message: Hl7Message, code: AckCode, text: string, err?: string): string {
  const ack = message.buildAck({ ackCode: code, ...(err === undefined ? {} : { errSegment: Hl7Segment.parse(err) }) })
  ack.getSegment('MSA')?.setField(3, escapeText(text))
  return ack.toString()
}

/** MSH-7 and MSH-10 are the clock's: compared apart (MSH-7 differs on purpose: the test below). */
function split(ack: string): { clock: string[]; rest: string } {
  const [msh = '', ...others] = ack.split('\r')
  const separator = msh.charAt(3)
  const fields = msh.split(separator)
  const clock = [fields[6] ?? '', fields[9] ?? '']
  fields[6] = 'T'
  fields[9] = 'C'
  return { clock, rest: [fields.join(separator), ...others].join('\r') }
}

const error: AckError = { field: 'PV1-3', code: 101, text: 'no bed | here ^ & ~ \\ \r\n' }

test('the ACK text is the library buildAck text, for the messages sites send', async (t) => {
  const messages = [
    adt({ event: 'A01', control: 'C-1', encounter: 'E1', bed: 'B1', facility: 'A' }),
    adt({ event: 'A03', control: 'C-2', encounter: 'E1', version: '2.3', segmentEnd: '\r\n', zSegment: true }),
    adt({ event: 'A08', control: 'C-3', encounter: 'E1', type: 'ADT^A08' }),
    adt({ event: 'A01', control: 'C-4', encounter: 'E1', type: 'ADT' }),
    'MSH|^~\\&|APP|FAC',
    'MSH|^~\\&|APP|FAC|WARD|FS|20260105103000||ADT^A01^ADT_A01|X-1|P',
    'MSH#$*@!#APP#FAC#WARD#FS#20260105103000##ADT$A01$ADT_A01#X-2#P#2.4\rEVN#A01',
  ]
  for (const text of messages) {
    const message = Hl7Message.parse(text)
    for (const [code, why, err] of [
      ['AA', 'applied', undefined],
      ['AA', 'parked: the bed | is taken', undefined],
      ['AR', 'rejected', error],
      ['AE', 'busy', { field: '', code: 206, text: 'busy' }],
      ['AR', 'rejected', { field: 'MSH', code: 207, text: 'x' }],
    ] as [AckCode, string, AckError | undefined][]) {
      const before = Date.now()
      const ours = split(ackFor(message, code, why, err))
      const reference = split(
        libraryAck(message, code, why, err === undefined ? undefined : ackFor(message, code, why, err).split('\r')[2]),
      )
      t.equal(ours.rest, reference.rest, `${text.slice(0, 40)} ${code} ${why}`)
      const [stamp = '', control = ''] = ours.clock
      t.match(stamp, /^\d{14}\.\d{3}\+0000$/, 'MSH-7 a UTC time stamp with ms and offset')
      t.ok(Number(control) >= before && Number(control) <= Date.now(), 'MSH-10 the clock in ms')
    }
  }
})

// The library's formatHl7DateTime writes 42 ms as `.42` (read: 420 ms) and no offset: the ACK's
// MSH-7 deliberately differs from it. Its MSH-10 is still the clock in ms.
test('MSH-7 is the UTC clock with zero-padded milliseconds and the offset +0000', async (t) => {
  const message = Hl7Message.parse('MSH|^~\\&|APP|FAC|WARD|FS|20260105103000||ADT^A01|X-1|P|2.5.1')
  const real = Date.now
  const realDate = globalThis.Date
  t.teardown(() => {
    Date.now = real
    globalThis.Date = realDate
  })
  for (const [at, expected] of [
    [Date.UTC(2026, 11, 6, 16, 10, 10, 42), '20261206161010.042+0000'],
    [Date.UTC(2026, 0, 5, 10, 30, 0, 5), '20260105103000.005+0000'],
    [Date.UTC(2026, 0, 5, 10, 30, 0, 0), '20260105103000.000+0000'],
    [Date.UTC(2026, 11, 31, 23, 59, 59, 999), '20261231235959.999+0000'],
  ] as const) {
    t.equal(hl7Now(new realDate(at)), expected, new realDate(at).toISOString())
    globalThis.Date = class extends realDate {
      constructor(...args: unknown[]) {
        if (args.length === 0) super(at)
        else super(...(args as [number]))
      }
    } as DateConstructor
    const ours = ackFor(message, 'AA', 'applied').split('\r')[0]?.split('|')
    t.equal(ours?.[6], expected, 'the ACK carries it as MSH-7')
    t.equal(ours?.[9], String(at))
    const unparseable = ackForUnparseable('x', { field: '', code: 100, text: 'x' }).split('\r')[0]?.split('|')
    t.equal(unparseable?.[6], expected, 'so does the AR of an unparseable frame')
    globalThis.Date = realDate
  }
})

test('the AR of an unparseable frame: MSA-2 empty, MSA-3 the reason, then ERR', async (t) => {
  const ack = ackForUnparseable('not HL7 | at all', { field: '', code: 100, text: 'not HL7' })
  const parsed = Hl7Message.parse(ack)
  t.equal(parsed.toString(), ack, 'the text reads back as itself')
  t.equal(parsed.getSegment('MSA')?.toString(), 'MSA|AR||not HL7 \\F\\ at all')
  t.equal(parsed.getSegment('ERR')?.getField(3)?.toString(), '100^Segment sequence error^HL70357')
  t.match(parsed.getSegment('MSH')?.getField(7)?.toString(), /^\d{14}\.\d{3}\+0000$/)
})
