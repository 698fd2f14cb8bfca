import fc from 'fast-check'
import t from 'tap'
import type { FeedEvent } from '../../db/repositories/feed.js'
import { FeedDelivery } from '../../feed/views.js'
import { propertyRuns } from '../property-runs.js'

// The hub offers an event only to its facility's streams and to those without a facility; the view
// checks the facility again. The isolation tests go through both layers, so this one holds the
// second on its own: a routing slip in the hub must still never put a record on a foreign stream.

const record = {
  id: '0123456789abcdef01234567',
  encounter: 'enc-1',
  bed: 'B-1',
  occupiedBy: 'patient-1',
  facility: 'ward-a',
  createdAt: 1,
  occupiedAt: 1,
  createdBy: 'nurse',
}

function event(facility: string | null): FeedEvent {
  return {
    seq: 7,
    at: 1,
    resource: 'ward-occupants',
    action: 'created',
    recordId: record.id,
    facility,
    audience: null,
    payload: JSON.stringify({ ...record, facility: facility ?? undefined }),
  }
}

const viewer = (facility: string | null) => ({ account: 'someone', role: 'read' as const, facility })

t.test('a record of one facility is framed for its facility and for unbound viewers only', async (t) => {
  const delivery = new FeedDelivery(event('ward-a'))
  t.equal(delivery.frameFor(viewer('ward-b')), null, 'another facility gets nothing')
  const own = delivery.frameFor(viewer('ward-a'))
  t.match(own, /^id: 7\nevent: ward-occupants created\ndata: \{.*"bed":"B-1".*\}\n\n$/)
  t.equal(delivery.frameFor(viewer(null)), own, 'an unbound viewer sees the same frame')
})

t.test('a record without a facility is framed for unbound viewers only', async (t) => {
  const delivery = new FeedDelivery(event(null))
  t.equal(delivery.frameFor(viewer('ward-a')), null)
  t.not(delivery.frameFor(viewer(null)), null)
})

t.test('the per-side events of a move are framed for their side only', async (t) => {
  const side = (audience: 'bound' | 'unbound', facility: string) =>
    new FeedDelivery({ ...event(facility), audience, action: audience === 'bound' ? 'removed' : 'patched' })
  const bound = side('bound', 'ward-a')
  t.not(bound.frameFor(viewer('ward-a')), null, 'the old facility sees it leave')
  t.equal(bound.frameFor(viewer(null)), null, 'not the tokens without a facility')
  t.equal(bound.frameFor(viewer('ward-b')), null)
  const unbound = side('unbound', 'ward-a')
  t.equal(unbound.frameFor(viewer('ward-a')), null, 'the patch is not for the facility')
  t.not(unbound.frameFor(viewer(null)), null, 'but for the tokens without one')
})

// Frames are shared between the viewers of one view. Whatever the order in which viewers ask, and
// however their facilities and accounts are spelled, each must get the frame it would get alone.
const FACILITIES = [null, 'A', 'B', '', 'A|x']
const ACCOUNTS = ['u', 'v', 'x|', '']
const arbViewer = fc.record({
  account: fc.constantFrom(...ACCOUNTS),
  role: fc.constantFrom('read' as const, 'write' as const, 'admin' as const),
  facility: fc.constantFrom(...FACILITIES),
})
const arbMark = fc.record({ account: fc.constantFrom(...ACCOUNTS), facility: fc.constantFrom(...FACILITIES) })

t.test('a shared frame is the frame each viewer would get alone, in any order', async (t) => {
  await fc.assert(
    fc.property(
      fc.uniqueArray(arbMark, { maxLength: 5, selector: (m) => m.account }),
      fc.option(fc.uniqueArray(fc.constantFrom(...ACCOUNTS), { minLength: 1 }), { nil: undefined }),
      fc.array(arbViewer, { minLength: 2, maxLength: 8 }),
      (marks, to, viewers) => {
        const record = {
          id: '0123456789abcdef01234567',
          createdAt: 1,
          code: 'c',
          type: 't',
          title: 'x',
          body: 'y',
          seenBy: marks.map((m) => m.account),
          ...(to ? { to } : {}),
        }
        const payload = JSON.stringify({ record, broadcast: to === undefined, unboundOnly: false, marks })
        const notice: FeedEvent = { ...event(null), resource: 'notifications', payload }
        const shared = new FeedDelivery(notice)
        for (const v of viewers) {
          const alone = new FeedDelivery(notice).frameFor(v)
          if (shared.frameFor(v) !== alone) return false
        }
        return true
      },
    ),
    { numRuns: propertyRuns(200) },
  )
  t.pass('every viewer got its own view')
})
