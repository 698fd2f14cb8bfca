/** Litestream's JSON log (`logging: {type: json}`), one object a line, read for our log and /health. */

export type LogLevel = 'debug' | 'info' | 'warn' | 'error'

export interface LitestreamLine {
  /** When Litestream wrote it (ms since the epoch). */
  at: number
  level: LogLevel
  msg: string
  /** Everything else it said (db, replica, position, elapsed, error ...). */
  fields: Record<string, unknown>
  /**
   * For "wal segment written" and "snapshot written": when Litestream began reading what it just
   * wrote to the replica. Every commit before that was in it, give or take one monitor interval.
   */
  shippedUpTo: number | null
  /** The error it reports, if any. */
  error: string | null
}

const LEVELS: Record<string, LogLevel> = { DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' }
// Written once or twice a second while the ward works: worth a debug line, not an info line.
const ROUTINE = new Set(['write wal segment', 'wal segment written'])
const SHIPPED = new Set(['wal segment written', 'snapshot written'])

/** One line of Litestream's output; text that is not its JSON (a Go panic) is kept as a warning. */
export function parseLine(line: string, now = Date.now()): LitestreamLine {
  let entry: Record<string, unknown>
  try {
    const parsed: unknown = JSON.parse(line)
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object')
    entry = parsed as Record<string, unknown>
  } catch {
    return { at: now, level: 'warn', msg: line, fields: {}, shippedUpTo: null, error: null }
  }
  const { time, level, msg, ...fields } = entry
  const at = typeof time === 'string' && !Number.isNaN(Date.parse(time)) ? Date.parse(time) : now
  const text = typeof msg === 'string' ? msg : ''
  const mapped = LEVELS[String(level)] ?? 'info'
  return {
    at,
    level: ROUTINE.has(text) && mapped === 'info' ? 'debug' : mapped,
    msg: text,
    fields,
    shippedUpTo: SHIPPED.has(text) ? at - parseGoDuration(fields.elapsed) : null,
    error: typeof fields.error === 'string' ? fields.error : null,
  }
}

/**
 * The error Litestream gave for a failed command: its last JSON line with one, or (before it has
 * read its logging settings it writes text) its last `error="..."`; else all it said.
 */
export function errorOfOutput(output: string): string {
  const lines = output.split('\n').filter((line) => line.trim() !== '')
  for (const line of lines.reverse()) {
    const parsed = parseLine(line)
    if (parsed.error !== null) return parsed.error
    const text = /\berror="((?:[^"\\]|\\.)*)"/.exec(line)?.[1]
    if (text !== undefined) return text.replace(/\\(.)/g, '$1')
  }
  return output.trim()
}

const UNITS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, µs: 0.001, us: 0.001, ns: 0.000001 }

/** Go's time.Duration text ("1.5s", "447.131µs", "2m3.1s") in milliseconds; 0 when unreadable. */
export function parseGoDuration(text: unknown): number {
  if (typeof text !== 'string') return 0
  let ms = 0
  for (const [, n, unit] of text.matchAll(/([\d.]+)(h|ms|m|s|µs|us|ns)/g))
    ms += Number(n) * (UNITS[unit as string] ?? 0)
  return ms
}

/**
 * Replaces every secret (a URL's password, S3 keys from the environment, REPLICA_CONFIG's secret
 * values) in a text by `[redacted]`. Short values are left alone: "1" is nobody's password, and
 * scrubbing it would garble every number in the log.
 */
export function redactor(secrets: readonly string[]): (text: string) => string {
  const kept = [...new Set(secrets.filter((s) => s.length >= 4))].sort((a, b) => b.length - a.length)
  if (kept.length === 0) return (text) => text
  return (text) => kept.reduce((out, secret) => out.split(secret).join('[redacted]'), text)
}

/** The secrets Litestream may be given through its environment. */
export function secretsOfEnv(env: NodeJS.ProcessEnv): string[] {
  return Object.entries(env)
    .filter(([name]) => /^(LITESTREAM|AWS|AZURE|GOOGLE)_/.test(name) && /KEY|SECRET|PASSWORD|TOKEN/.test(name))
    .map(([, value]) => value ?? '')
}

/** Every string in `value` scrubbed, nested objects and arrays too. */
export function redactValue(value: unknown, redact: (text: string) => string): unknown {
  if (typeof value === 'string') return redact(value)
  if (Array.isArray(value)) return value.map((item) => redactValue(item, redact))
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, redactValue(item, redact)]))
  return value
}
