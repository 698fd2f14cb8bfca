/**
 * HL7 v2 timestamps (DTM/TS: YYYY[MM[DD[HH[MM[SS[.S...]]]]]][+/-ZZZZ]) to epoch milliseconds. A
 * timestamp without an offset is a wall-clock time of the sending hospital, read in `timeZone`
 * (an IANA zone such as Europe/Berlin). Pure: no clock, no I/O.
 */
const TS = /^(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?(?:\.(\d{1,4}))?(?:([+-])(\d{2})(\d{2}))?$/

/**
 * One formatter per zone: building an Intl.DateTimeFormat loads the zone's rules and costs far more
 * than formatting with it (about a millisecond of an ADT message's CPU went to building four of
 * them). A service reads one or two zones; a caller passing many only rebuilds past the bound.
 */
const formatters = new Map<string, Intl.DateTimeFormat>()
const MAX_FORMATTERS = 16

function formatterOf(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone)
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    })
    if (formatters.size >= MAX_FORMATTERS) formatters.clear()
    formatters.set(timeZone, formatter)
  }
  return formatter
}

/** The zone's offset from UTC, in ms, at the instant `utcMs` (e.g. +3_600_000 for CET). */
function exactOffsetMs(timeZone: string, utcMs: number): number {
  const parts = formatterOf(timeZone).formatToParts(new Date(utcMs))
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value)
  const asUtc = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second'))
  return asUtc - Math.floor(utcMs / 1000) * 1000
}

/**
 * Offsets by zone and UTC hour. Asking the formatter costs tens of µs (four asks per ADT message,
 * about a fifth of reading it); the messages of a feed fall in a few hours. An hour whose first and
 * last second have the same offset is taken to have it throughout (a zone changes its offset at
 * most a few times a year; two changes within one hour that cancel out are unknown to tzdb); an
 * hour with a change in it is asked exactly each time.
 */
const HOUR_MS = 3_600_000
const hourOffsets = new Map<string, number | null>()
const MAX_HOURS = 1024

function zoneOffsetMs(timeZone: string, utcMs: number): number {
  const hour = Math.floor(utcMs / HOUR_MS)
  const key = `${hour} ${timeZone}`
  let offset = hourOffsets.get(key)
  if (offset === undefined) {
    const start = exactOffsetMs(timeZone, hour * HOUR_MS)
    offset = start === exactOffsetMs(timeZone, hour * HOUR_MS + HOUR_MS - 1000) ? start : null
    if (hourOffsets.size >= MAX_HOURS) hourOffsets.clear()
    hourOffsets.set(key, offset)
  }
  return offset ?? exactOffsetMs(timeZone, utcMs)
}

/** The epoch ms of an HL7 timestamp, or null when the text is not one (or names no real date). */
export function parseHl7Time(text: string, timeZone: string): number | null {
  const m = TS.exec(text.trim())
  if (!m) return null
  const [, y, mo = '01', d = '01', h = '00', mi = '00', s = '00', frac = '', sign, oh, om] = m
  const wall = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s))
  const check = new Date(wall)
  // Date.UTC rolls 2024-02-31 over into March: a date that is not a date is refused instead.
  if (check.getUTCMonth() !== Number(mo) - 1 || check.getUTCDate() !== Number(d) || Number(h) > 23) return null
  if (Number(mi) > 59 || Number(s) > 59) return null
  const ms = frac === '' ? 0 : Math.round(Number(`0.${frac}`) * 1000)
  if (sign !== undefined) {
    const offset = (Number(oh) * 60 + Number(om)) * 60_000 * (sign === '-' ? -1 : 1)
    return wall - offset + ms
  }
  // The offset at the wall time read as UTC is right except near a DST change: ask again there.
  let utc = wall - zoneOffsetMs(timeZone, wall)
  utc = wall - zoneOffsetMs(timeZone, utc)
  return utc + ms
}
