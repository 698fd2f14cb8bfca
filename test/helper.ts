import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { buildApp } from '../app.js'
import { type Config, defaultConfig } from '../config.js'
import type { Role } from '../domain/principal.js'
import { sharedCompilers } from './shared-compilers.js'

export type TestApp = Awaited<ReturnType<typeof buildApp>>

/** Tokens every test gets: by role, across facilities, and bound to facility A or B. */
export interface TestTokens {
  admin: string
  write: string
  read: string
  writeA: string
  readA: string
  writeB: string
  adminA: string
}

export function bearer(token: string): { authorization: string } {
  return { authorization: `Bearer ${token}` }
}

/**
 * A fresh app on a fresh in-memory database, closed when the test ends. Rate limits are off
 * unless a test turns them on; config is passed as options, never through process.env. Its route
 * schemas are compiled once a process, shared with the process's other apps (test/shared-compilers.ts).
 */
export async function buildTestApp(t: Test, overrides: Partial<Config> = {}) {
  const config = defaultConfig({ DATABASE_PATH: ':memory:', LOG_LEVEL: 'silent', RATE_LIMIT_MAX: 0, ...overrides })
  const app = await buildApp(config, sharedCompilers)
  t.teardown(() => app.close())
  const make = (account: string, role: Role, facility: string | null = null) =>
    app.tokens.create({ account, role, facility, label: `test ${account}` }).token
  const tokens: TestTokens = {
    admin: make('admin-1', 'admin'),
    write: make('nurse-all', 'write'),
    read: make('viewer-all', 'read'),
    writeA: make('nurse-a', 'write', 'A'),
    readA: make('viewer-a', 'read', 'A'),
    writeB: make('nurse-b', 'write', 'B'),
    adminA: make('admin-a', 'admin', 'A'),
  }
  return { app, tokens, config }
}

const healthAdmins = new WeakMap<TestApp, string>()

/** GET /health as the operator sees it: an admin token without a facility gets the details. */
export function operatorHealth(app: TestApp) {
  let token = healthAdmins.get(app)
  if (token === undefined) {
    token = app.tokens.create({ account: 'operator', role: 'admin', facility: null, label: 'health details' }).token
    healthAdmins.set(app, token)
  }
  return app.inject({ url: '/health', headers: bearer(token) })
}

/**
 * A temporary directory removed after every teardown registered later (an app's close among them).
 * Not t.testdir() where a process the app starts writes there (Litestream): tap removes a testdir
 * before the test's teardowns, so while Litestream may still write (ENOTEMPTY, seen under load).
 * Call it before the app is built: teardowns run last registered first.
 */
export function dirRemovedLast(t: Test, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `${prefix}-`))
  t.teardown(() => rmSync(dir, { recursive: true, force: true, maxRetries: 5 }))
  return dir
}
