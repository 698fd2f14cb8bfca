import { join } from 'node:path'
import type { Test } from 'tap'
import { buildApp } from '../../app.js'
import { defaultConfig } from '../../config.js'
import { sharedCompilers } from '../shared-compilers.js'
import { openSender, type Sender } from './client.js'

/**
 * A server with an ADT listener that answers `message`, is closed, and starts again on the same
 * database: what a sender meets when it resends after a restart. Returns the first ACK, the new
 * server, an admin token of it and a new connection to it (closed at the test's end).
 */
export async function answeredThenRestarted(t: Test, message: string) {
  const config = defaultConfig({
    DATABASE_PATH: join(t.testdir(), 'ward.db'),
    LOG_LEVEL: 'silent',
    HL7_PORT: 0,
    RATE_LIMIT_MAX: 0,
  })
  const before = await buildApp(config, sharedCompilers)
  const firstSender = await openSender(before.hl7.port as number)
  const first = await firstSender.send(message)
  await firstSender.close()
  await before.close()

  const app = await buildApp(config, sharedCompilers)
  t.teardown(() => app.close())
  const admin = app.tokens.create({ account: 'a', role: 'admin' }).token
  const sender: Sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  return { first, app, admin, sender }
}
