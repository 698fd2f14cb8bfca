// The live feed: a ticket per connection (EventSource cannot send the token), resumed by event id.
import { api } from './api.js'

const EVENTS = [
  'ward-occupants created',
  'ward-occupants patched',
  'ward-occupants removed',
  'notifications created',
  'notifications patched',
  'bed-states patched',
]
const RETRY_MS = [500, 1000, 2000, 3000]

/**
 * Keeps one stream open. `onLoad` runs on `ready` and `reset` (reload the lists), `onChange` for
 * each change, `onStatus(online)` when the connection is lost or back, `onRefused(error)` when the
 * token is no longer accepted. After an error the stream is closed (EventSource would retry with
 * the used ticket) and reopened with a fresh ticket from after the last event received.
 */
export function connectFeed({ onLoad, onChange, onStatus, onRefused }) {
  let source = null
  let lastEventId = null
  let attempt = 0
  let timer = null
  let stopped = false

  async function open() {
    timer = null
    let ticket
    try {
      ;({ ticket } = await api('/events/tickets', { method: 'POST' }))
    } catch (error) {
      if (error.status === 401 || error.status === 403) return onRefused(error)
      onStatus(false)
      return retry()
    }
    if (stopped) return
    const query = new URLSearchParams({ ticket, resources: 'ward-occupants,notifications,bed-states' })
    if (lastEventId !== null) query.set('lastEventId', lastEventId)
    source = new EventSource(`/events?${query}`)
    source.addEventListener('open', () => {
      attempt = 0
      onStatus(true)
    })
    for (const type of ['ready', 'reset']) {
      source.addEventListener(type, (event) => {
        lastEventId = event.lastEventId
        onLoad(type)
      })
    }
    for (const type of EVENTS) {
      source.addEventListener(type, (event) => {
        lastEventId = event.lastEventId
        const [resource, action] = type.split(' ')
        onChange(resource, action, JSON.parse(event.data))
      })
    }
    source.addEventListener('error', () => {
      source.close()
      source = null
      onStatus(false)
      retry()
    })
  }

  function retry() {
    if (stopped || timer) return
    const wait = RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)]
    attempt += 1
    timer = setTimeout(open, wait)
  }

  open()
  return {
    close() {
      stopped = true
      clearTimeout(timer)
      source?.close()
    },
  }
}
