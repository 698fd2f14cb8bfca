import { Writable } from 'node:stream'
import type { Test } from 'tap'
import { buildApp, loggerOptions } from '../../app.js'
import { type Config, defaultConfig } from '../../config.js'

/**
 * An app on an in-memory database whose log goes through the service's own logger options (its
 * serializers and redaction, as `npm start` writes it) into `lines`, one chunk a line as pino wrote it.
 */
export async function appWithLog(t: Test, overrides: Partial<Config>) {
  const config = defaultConfig({ DATABASE_PATH: ':memory:', RATE_LIMIT_MAX: 0, ...overrides })
  const lines: string[] = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk))
      done()
    },
  })
  const logger = { ...(loggerOptions(config) as object), stream }
  const app = await buildApp(config, { logger } as Parameters<typeof buildApp>[1])
  t.teardown(() => app.close())
  return { app, lines, log: () => lines.join('') }
}
