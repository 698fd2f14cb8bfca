import { test } from 'tap'
import { contentDigest } from '../../domain/hl7-content.js'
import { adt } from './messages.js'

// What "the same message" is for exactly-once: the segments, character for character; not the
// terminators between them, which engines rewrite when they store and resend a message.

test('only the framing between segments does not count', async (t) => {
  const fields = { event: 'A01', control: 'C-1', encounter: 'E1', bed: 'B1', zSegment: true }
  const digest = contentDigest(adt({ ...fields, segmentEnd: '\r' }))
  t.match(digest, /^[0-9a-f]{64}$/)
  for (const [how, text] of [
    ['CRLF', adt({ ...fields, segmentEnd: '\r\n' })],
    ['LF', adt({ ...fields, segmentEnd: '\r' }).replaceAll('\r', '\n')],
    ['a last CR', `${adt(fields)}\r`],
    ['a last CRLF and an empty line', `${adt({ ...fields, segmentEnd: '\r\n' })}\r\n\r\n`],
    ['empty lines between segments', adt(fields).replaceAll('\r', '\r\r\n')],
  ] as const)
    t.equal(contentDigest(text), digest, how)
})

test('anything inside a segment counts', async (t) => {
  const fields = { event: 'A01', control: 'C-1', encounter: 'E1', bed: 'B1' }
  const digest = contentDigest(adt(fields))
  for (const [how, text] of [
    ['another encounter', adt({ ...fields, encounter: 'E2' })],
    ['a re-stamped MSH-7', adt({ ...fields, at: '20260105103001' })],
    ['a trailing space', adt(fields).replace('PV1|1', 'PV1|1 ')],
    ['a trailing empty field', adt(fields).replace(/\rPID\|/, '|\rPID|')],
    ['a segment dropped', adt(fields).split('\r').slice(0, -1).join('\r')],
  ] as const)
    t.not(contentDigest(text), digest, how)
  t.not(
    contentDigest(adt({ ...fields, patient: 'P\\T\\1' })),
    contentDigest(adt({ ...fields, patient: 'P\\X26\\1' })),
    'an escape written another way: the same value, other characters',
  )
})
