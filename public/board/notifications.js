// The signed-in account's unread notifications, each marked seen with a click.
import { api } from './api.js'
import { clock, redact } from './format.js'

export class UnreadNotifications {
  constructor({ list, count, none, onError, knownIds, facility }) {
    this.list = list
    this.count = count
    this.none = none
    this.onError = onError
    this.knownIds = knownIds
    this.facility = facility // the board's facility: others' notifications are not shown
    this.items = new Map() // id -> { record, node }
    this.privacy = true
  }

  /** Notifications of another facility reach a token without one; the board shows its own. */
  belongs(record) {
    return record.facility === undefined || record.facility === this.facility()
  }

  async load() {
    const query = { $unseen: 'true', '$sort[createdAt]': '-1', $limit: '100' }
    const { notifications } = await api('/notifications', { query })
    this.list.replaceChildren()
    this.items.clear()
    for (const record of notifications.filter((r) => this.belongs(r)).reverse()) this.add(record)
  }

  add(record) {
    if (this.items.has(record.id) || !this.belongs(record)) return
    const node = document.createElement('li')
    const title = document.createElement('p')
    title.className = 'note-title'
    const body = document.createElement('p')
    body.className = 'note-body'
    const time = document.createElement('p')
    time.className = 'note-time'
    time.textContent = clock(record.createdAt)
    const button = document.createElement('button')
    button.type = 'button'
    button.textContent = 'Mark seen'
    button.addEventListener('click', () => this.markSeen(record.id, button))
    node.append(title, body, time, button)
    this.items.set(record.id, { record, node, title, body, button })
    this.list.prepend(node)
    this.fill(record.id)
    this.update()
  }

  /** A mark seen anywhere: gone from the list when it was this account's (asked, not guessed). */
  async changed(record) {
    if (!this.items.has(record.id)) return
    const { total } = await api('/notifications', { query: { id: record.id, $unseen: 'true', $limit: '0' } })
    if (total === 0) this.remove(record.id)
  }

  async markSeen(id, button) {
    button.disabled = true
    try {
      await api(`/notifications/${encodeURIComponent(id)}/seen`, { method: 'POST' })
      this.remove(id)
    } catch (error) {
      button.disabled = false
      this.onError(error)
    }
  }

  remove(id) {
    const item = this.items.get(id)
    if (!item) return
    const next = item.node.nextElementSibling ?? item.node.previousElementSibling
    const hadFocus = item.node.contains(document.activeElement)
    item.node.remove()
    this.items.delete(id)
    // Keyboard users stay in the list instead of falling back to the top of the page.
    if (hadFocus) next?.querySelector('button')?.focus()
    this.update()
  }

  setPrivacy(on) {
    this.privacy = on
    for (const id of this.items.keys()) this.fill(id)
  }

  /** Titles and bodies name encounters: masked when privacy is on. */
  fill(id) {
    const { record, title, body } = this.items.get(id)
    const ids = this.knownIds()
    if (record.meta && typeof record.meta.encounter === 'string') ids.add(record.meta.encounter)
    const show = (text) => (this.privacy ? redact(text, ids) : text)
    title.textContent = show(record.title)
    body.textContent = show(record.body)
  }

  update() {
    this.count.textContent = String(this.items.size)
    this.none.hidden = this.items.size > 0
  }
}
