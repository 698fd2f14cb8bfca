// The bed board: sign-in, the beds and notifications, kept live from the feed (docs/BOARD.md).
import { api, session } from './api.js'
import { BedBoard } from './beds.js'
import { connectFeed } from './feed.js'
import { startOfToday } from './format.js'
import { UnreadNotifications } from './notifications.js'
import { beginSignIn, finishSignIn, loadSignIn } from './sign-in.js'

const $ = (id) => document.getElementById(id)

let feed = null
let facility = null // the facility shown, as the service named it (null: records without one)
let loading = null // changes that arrive while the lists load, applied after them
let day = startOfToday()

const board = new BedBoard($('rooms'), { onAnnounce: announce })
const notes = new UnreadNotifications({
  list: $('notification-list'),
  count: $('unread-count'),
  none: $('no-notifications'),
  onError: problem,
  knownIds: () => board.knownIds(),
  facility: () => facility ?? undefined,
})

function announce(text) {
  $('announcer').textContent = text
}

function problem(error) {
  // A failed fetch while the connection is down is what the offline banner already says.
  if (error instanceof TypeError && !$('offline').hidden) return
  const box = $('problem')
  box.textContent = error ? `Problem: ${error.message}` : ''
  box.hidden = !error
  board.fit()
}

function setOffline(offline) {
  $('offline').hidden = !offline
  board.fit()
}

let notesOpen = false
function show(signedIn) {
  $('signin').hidden = signedIn
  for (const id of ['board', 'counts', 'controls']) $(id).hidden = !signedIn
  $('notifications').hidden = !(signedIn && notesOpen)
  if (!signedIn) setOffline(false)
  else board.fit()
}

/** The notifications open over the beds, never beside them: the beds keep the whole screen. */
function toggleNotes(open = !notesOpen) {
  notesOpen = open
  $('notes-toggle').setAttribute('aria-expanded', String(open))
  $('notifications').hidden = !open
  if (open) $('notifications').focus()
}

async function loadAll() {
  loading = []
  try {
    const list = await api('/beds', { query: session.facility ? { facility: session.facility } : {} })
    facility = list.facility ?? null
    $('facility-name').textContent = facility ? `· ${facility}` : ''
    board.load(list.beds)
    await notes.load()
    for (const [resource, action, record] of loading) applyChange(resource, action, record)
    loading = null
    await countDischarges()
    problem(null)
  } catch (error) {
    loading = null
    if (error.status === 401 || error.status === 403) return signOut(error)
    problem(error)
  }
}

function applyChange(resource, action, record) {
  if (loading) return loading.push([resource, action, record])
  if (resource === 'ward-occupants') {
    if ((record.facility ?? null) !== facility) return
    board.apply(action, record)
    scheduleCounts()
  } else if (resource === 'bed-states') {
    if ((record.facility ?? null) !== facility) return
    board.applyStatus(record)
    scheduleCounts()
  } else if (action === 'created') {
    notes.add(record)
  } else if (action === 'patched') {
    notes.changed(record).catch(problem)
  }
}

let countTimer = null
function scheduleCounts() {
  drawCounts()
  clearTimeout(countTimer)
  countTimer = setTimeout(() => countDischarges().catch(problem), 150)
}

function drawCounts(discharged) {
  const { used, free } = board.counts()
  $('count-used').textContent = String(used)
  $('count-free').textContent = String(free)
  if (discharged !== undefined) $('count-discharged').textContent = String(discharged)
  $('empty').hidden = used + free > 0
}

/** Discharges since midnight of the browser's day, counted by the service. */
async function countDischarges() {
  if (!session.token) return
  const query = { 'dischargedAt[$gte]': String(startOfToday()), $limit: '0', facility: facility ?? 'null' }
  const { total } = await api('/ward-occupants', { query })
  drawCounts(total)
}

function start() {
  show(true)
  board.setPrivacy(session.privacy)
  notes.setPrivacy(session.privacy)
  drawPrivacy()
  feed = connectFeed({
    onLoad: loadAll,
    onChange: applyChange,
    onStatus: (online) => {
      setOffline(!online)
      if (online) problem(null)
    },
    onRefused: signOut,
  })
}

function signOut(error) {
  // A count scheduled by the last change would otherwise be asked without a token (a 401).
  clearTimeout(countTimer)
  feed?.close()
  feed = null
  session.signOut()
  board.load([])
  notes.list.replaceChildren()
  notes.items.clear()
  facility = null
  $('facility-name').textContent = ''
  notesOpen = false
  $('notes-toggle').setAttribute('aria-expanded', 'false')
  show(false)
  problem(error instanceof Error ? error : null)
  $('token').focus()
}

function drawPrivacy() {
  const button = $('privacy')
  button.setAttribute('aria-pressed', String(session.privacy))
  button.textContent = session.privacy ? 'Privacy: on (ids hidden)' : 'Privacy: off (ids shown)'
}

$('signin').addEventListener('submit', (event) => {
  event.preventDefault()
  const token = $('token').value.trim()
  if (!token) return
  session.signIn(token, $('facility').value.trim())
  $('token').value = ''
  start()
})
$('signout').addEventListener('click', () => signOut())
$('notes-toggle').addEventListener('click', () => toggleNotes())
window.addEventListener('resize', () => board.fit())
$('privacy').addEventListener('click', () => {
  session.privacy = !session.privacy
  board.setPrivacy(session.privacy)
  notes.setPrivacy(session.privacy)
  drawPrivacy()
})

// Arrow keys move between beds; Home and End go to the first and last.
$('rooms').addEventListener('keydown', (event) => {
  const beds = [...$('rooms').querySelectorAll('.bed')]
  const at = beds.indexOf(document.activeElement)
  if (at === -1) return
  const moves = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1, Home: -at, End: beds.length - 1 - at }
  const move = moves[event.key]
  if (move === undefined) return
  event.preventDefault()
  beds[Math.max(0, Math.min(beds.length - 1, at + move))].focus()
})

// Times move on; at midnight the discharges of the new day start from zero.
setInterval(() => {
  if (!feed) return
  board.tick()
  if (startOfToday() !== day) {
    day = startOfToday()
    countDischarges().catch(problem)
  }
}, 15_000)

$('provider-signin').addEventListener('click', () => {
  beginSignIn($('facility').value.trim()).catch(problem)
})

async function boot() {
  try {
    $('provider').hidden = !(await loadSignIn(() => {}))
    const facilityAsked = await finishSignIn()
    if (facilityAsked !== undefined) session.signedInWithProvider(facilityAsked)
  } catch (error) {
    show(false)
    return problem(error)
  }
  if (session.token) start()
  else show(false)
}
boot()
