import t from 'tap'
import type { FeedEvent } from '../../db/repositories/feed.js'
import { FeedDelivery } from '../../feed/views.js'

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
