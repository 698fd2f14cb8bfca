// Formatting helpers: durations, clock times and the privacy filter for free text.

/** "just now", "12 min", "3 h 05 min", "2 d 4 h" */
export function duration(ms) {
  const minutes = Math.max(0, Math.floor(ms / 60_000))
  if (minutes < 1) return 'just now'
  if (minutes < 60) return `${minutes} min`
  const hours = Math.floor(minutes / 60)
  if (hours < 48) return `${hours} h ${String(minutes % 60).padStart(2, '0')} min`
  return `${Math.floor(hours / 24)} d ${hours % 24} h`
}

export function clock(at) {
  return new Date(at).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
}

/** Midnight of the browser's local day, as milliseconds. */
export function startOfToday(now = new Date()) {
  return new Date(now.getFullYear(), now.getMonth(), now.getDate()).getTime()
}

/** Sorts "B-2" before "B-10". */
export const natural = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' }).compare

export const HIDDEN = '•••'

function escapeRegExp(text) {
  return text.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')
}

// The service's own notification texts (domain/ward-events.ts) name an encounter between known
// words: everything between them is the id, whatever it holds (dots, colons, spaces).
const OWN_TEXTS = [
  /\b(Encounter )(?!•••)(.+?)( now occupies bed )/g,
  /\b(Encounter )(?!•••)(.+?)( was discharged from bed )/g,
  /\b(The discharge of encounter )(?!•••)(.+?)( from bed )/g,
  /\b(Encounter )(?!•••)(.+?)( was placed in bed )/g,
  /\b(Encounter )(?!•••)(.+?)( is expected in bed )/g,
  /\b(The pending (?:admission|transfer) of encounter )(?!•••)(.+?)( to bed )/g,
]
// Elsewhere (text an administrator posted), the word after "encounter", up to the next space; a
// sentence's closing punctuation stays.
const AFTER_THE_WORD = /\b(encounter)(\s+)(?!•••)\S+?([,.;:)!?]*)(?=\s|$)/gi

/**
 * Text with identifiers masked: every id the board knows (encounters, accounts, providers), then
 * encounters the board has not seen: in the service's own notifications, and after the word
 * "encounter". Longest ids first, so an id containing another is masked whole.
 */
export function redact(text, knownIds) {
  let out = text
  const ids = [...knownIds].filter((id) => id.length > 0).sort((a, b) => b.length - a.length)
  for (const id of ids) out = out.replace(new RegExp(escapeRegExp(id), 'g'), HIDDEN)
  for (const pattern of OWN_TEXTS) out = out.replace(pattern, `$1${HIDDEN}$3`)
  return out.replace(AFTER_THE_WORD, `$1$2${HIDDEN}$3`)
}
