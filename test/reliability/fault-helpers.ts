import { Writable } from 'node:stream'
import type { Test } from 'tap'
import { buildApp } from '../../app.js'
import { type Config, defaultConfig } from '../../config.js'
import type { Role } from '../../domain/principal.js'

export interface LogLine {
  level: number
  msg: string
  [key: string]: unknown
}

export const ERROR_LEVEL = 50

/** An app on a database file whose log lines are kept for the test to read. */
export async function buildLoggedApp(t: Test, overrides: Partial<Config>) {
  const lines: LogLine[] = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line))
      done()
    },
  })
  const config = defaultConfig({ RATE_LIMIT_MAX: 0, LOG_LEVEL: 'info', ...overrides })
  const app = await buildApp(config, { logger: { level: 'info', stream } })
  t.teardown(() => app.close())
  const token = (account: string, role: Role, facility: string | null = null) =>
    app.tokens.create({ account, role, facility }).token
  return { app, lines, token, errors: () => lines.filter((l) => l.level >= ERROR_LEVEL) }
}

/** Waits, turn by turn, until `condition` holds (never by the clock: tap's timeout bounds it). */
export async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 1))
}
