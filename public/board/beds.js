// The beds: their state, and one DOM node per bed, updated in place when that bed changes.
import { flagsOf, followStay, LABELS, stateOf, takeStatus } from './bed-states.js'
import { fitBeds } from './fit.js'
import { clock, duration, HIDDEN, natural, redact } from './format.js'

function element(tag, className, text) {
  const node = document.createElement(tag)
  if (className) node.className = className
  if (text !== undefined) node.textContent = text
  return node
}

/** Sets a text only when it differs, so an unchanged bed sees no DOM mutation at all. */
function setText(node, text) {
  if (node.textContent !== text) node.textContent = text
}

export class BedBoard {
  constructor(container, { onAnnounce }) {
    this.container = container
    this.onAnnounce = onAnnounce
    this.beds = new Map() // bed id -> { bed, room, active[], lastDischarged }
    this.nodes = new Map() // bed id -> the bed's <article>
    this.rooms = new Map() // room name -> { section, list }
    this.privacy = true
  }

  /** Replaces everything (after sign-in, `ready` or `reset`). */
  load(beds) {
    this.container.replaceChildren()
    this.beds.clear()
    this.nodes.clear()
    this.rooms.clear()
    this.loading = true
    for (const bed of beds) {
      this.beds.set(bed.bed, { ...bed, active: [...bed.active] })
      this.draw(bed.bed)
    }
    this.loading = false
    this.fit()
  }

  /** Every bed on the screen at once (fit.js); again when the space or the number of beds changes. */
  fit() {
    fitBeds(this.container, this.beds.size)
  }

  /** A bed-states change: the bed's housekeeping state, expectation and marks as they are now. */
  applyStatus(status) {
    let bed = this.beds.get(status.bed)
    if (!bed) {
      bed = { bed: status.bed, active: [] }
      this.beds.set(status.bed, bed)
    }
    const before = stateOf(bed)
    takeStatus(bed, status)
    this.draw(status.bed)
    this.announceChange(bed, before)
  }

  announceChange(bed, before) {
    const after = stateOf(bed)
    if (after !== before) this.onAnnounce(`Bed ${bed.bed}: ${LABELS[after].text.toLowerCase()}`)
  }

  /** A ward occupant created, patched or removed: only its bed is redrawn. */
  apply(action, record) {
    let bed = this.beds.get(record.bed)
    if (!bed) {
      if (action === 'removed') return
      bed = { bed: record.bed, room: record.room, active: [] }
      this.beds.set(record.bed, bed)
    }
    const before = stateOf(bed)
    followStay(bed, action, record)
    bed.active = bed.active.filter((o) => o.id !== record.id)
    if (bed.lastDischarged?.id === record.id) delete bed.lastDischarged
    if (action !== 'removed') {
      if (record.dischargedAt === undefined) {
        bed.active.push(record)
        bed.active.sort((a, b) => a.occupiedAt - b.occupiedAt)
      } else if (!bed.lastDischarged || record.dischargedAt >= bed.lastDischarged.dischargedAt) {
        bed.lastDischarged = record
      }
      if (record.room !== undefined) bed.room = record.room
    }
    this.draw(record.bed)
    this.announceChange(bed, before)
  }

  setPrivacy(on) {
    this.privacy = on
    for (const id of this.beds.keys()) this.draw(id)
  }

  /** The time texts and the recently-discharged marks move on with the clock. */
  tick() {
    for (const [id, bed] of this.beds) {
      const node = this.nodes.get(id)
      if (node && node.dataset.state !== stateOf(bed)) this.draw(id)
      else if (node) this.fillTimes(node, bed)
    }
  }

  /** In use (a stay is active, its patient here or on leave) and free (nothing holds or awaits it). */
  counts() {
    let used = 0
    let free = 0
    for (const bed of this.beds.values()) {
      const state = stateOf(bed)
      if (bed.active.length > 0) used++
      else if (state === 'free' || state === 'recent') free++
    }
    return { used, free }
  }

  /** Every id on screen, for masking free text when privacy is on. */
  knownIds() {
    const ids = new Set()
    for (const bed of this.beds.values()) {
      for (const o of [...bed.active, bed.lastDischarged].filter(Boolean)) {
        for (const key of ['encounter', 'occupiedBy', 'provider', 'createdBy', 'dischargedBy']) {
          if (o[key]) ids.add(o[key])
        }
      }
      // Who set its state, named in the ward's notice of an admission into it.
      if (bed.housekeeping?.setBy) ids.add(bed.housekeeping.setBy)
    }
    return ids
  }

  draw(id) {
    const bed = this.beds.get(id)
    let node = this.nodes.get(id)
    let added = false
    if (!node) {
      node = this.createNode(id)
      this.nodes.set(id, node)
      added = true
    }
    const room = bed.room ?? ''
    if (node.dataset.room !== room || !node.isConnected) {
      const left = this.rooms.get(node.dataset.room)
      this.place(node, room)
      if (left && left.list.children.length === 0) {
        left.section.remove()
        this.rooms.delete(left.section.dataset.room)
      }
    }
    const state = stateOf(bed)
    node.dataset.state = state
    node.className = `bed ${state}`
    const parts = node.parts
    setText(parts.icon, LABELS[state].icon)
    setText(parts.state, LABELS[state].text)
    const current = bed.active.at(-1)
    const shown = current ?? (state === 'recent' ? bed.lastDischarged : undefined)
    const more = bed.active.length > 1 ? ` (+${bed.active.length - 1} more)` : ''
    setText(parts.encounter, shown ? `Encounter ${this.privacy ? HIDDEN : shown.encounter}${more}` : '')
    setText(parts.provider, shown?.provider ? `Provider ${this.privacy ? HIDDEN : shown.provider}` : '')
    setText(parts.room, room === '' ? '' : `· ${room}`)
    setText(parts.flags, [flagsOf(bed, state), this.noteOf(bed)].filter(Boolean).join(' · '))
    this.fillTimes(node, bed)
    node.dataset.redraws = String(Number(node.dataset.redraws ?? 0) + 1)
    if (added && !this.loading) this.fit()
  }

  /** The note staff gave with a housekeeping state; free text, so masked like a notice (privacy). */
  noteOf(bed) {
    const note = bed.housekeeping?.note
    if (!note) return ''
    return `✎ ${this.privacy ? redact(note, this.knownIds()) : note}`
  }

  fillTimes(node, bed) {
    const now = Date.now()
    const current = bed.active.at(-1)
    let text = ''
    const state = stateOf(bed, now)
    if (current) text = `since ${clock(current.occupiedAt)} (${duration(now - current.occupiedAt)})`
    else if (bed.housekeeping && state === bed.housekeeping.state)
      text = `since ${clock(bed.housekeeping.since)} (${duration(now - bed.housekeeping.since)})`
    else if (state === 'expected') text = `expected since ${clock(bed.expected.since)}`
    else if (state === 'recent') {
      const left = bed.lastDischarged.dischargedAt
      const ago = duration(now - left)
      text = `left ${clock(left)} (${ago === 'just now' ? ago : `${ago} ago`})`
    }
    setText(node.parts.time, text)
  }

  createNode(id) {
    const node = element('article', 'bed')
    node.tabIndex = 0
    node.dataset.bed = id
    const head = element('h3', 'bed-name', `Bed ${id}`)
    const room = element('span', 'bed-room')
    head.append(' ', room)
    const status = element('p', 'bed-status')
    const icon = element('span', 'icon')
    icon.setAttribute('aria-hidden', 'true')
    const state = element('span', 'state')
    status.append(icon, ' ', state)
    const time = element('p', 'bed-time')
    const encounter = element('p', 'bed-encounter')
    const provider = element('p', 'bed-provider')
    const flags = element('p', 'bed-flags')
    node.append(head, status, flags, time, encounter, provider)
    node.parts = { icon, state, time, encounter, provider, room, flags }
    return node
  }

  /** Puts a bed in its room's list, in natural order; makes the room's section when it is new. */
  place(node, room) {
    node.dataset.room = room
    let entry = this.rooms.get(room)
    if (!entry) {
      const section = element('section', 'room')
      section.dataset.room = room
      section.append(element('h2', 'room-name', room === '' ? 'No room' : `Room ${room}`))
      const list = element('div', 'room-beds')
      section.append(list)
      entry = { section, list }
      this.rooms.set(room, entry)
      const after = [...this.rooms.keys()].filter((r) => natural(r, room) > 0).sort(natural)[0]
      this.container.insertBefore(section, after === undefined ? null : this.rooms.get(after).section)
    }
    const next = [...entry.list.children].find(
      (other) => other !== node && natural(other.dataset.bed, node.dataset.bed) > 0,
    )
    entry.list.insertBefore(node, next ?? null)
  }
}
