import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { buildApp } from '../../app.js'
import { defaultConfig } from '../../config.js'
import { openDatabase } from '../../db/connection.js'
import type { Role } from '../../domain/principal.js'
import { sharedCompilers } from '../shared-compilers.js'

/** Which remembered pages the pair differs in. */
export type PageCacheSetting = 'NOTIFICATION_PAGE_CACHE_BYTES' | 'WARD_OCCUPANT_PAGE_CACHE_BYTES'

export interface Caller {
  account: string
  role: Role
  facility: string | null
}

/**
 * Two apps on one new database file: one that remembers pages (`cacheBytes` of `setting`) and the
 * oracle, which remembers none; a third connection to the file, as the CLI or an administrator's
 * shell; a token per caller. `close()` removes them all.
 */
export async function twoApps(setting: PageCacheSetting, cacheBytes: number, callers: readonly Caller[]) {
  const dir = mkdtempSync(join(tmpdir(), 'page-cache-'))
  const path = join(dir, 'facility.db')
  const config = defaultConfig({ DATABASE_PATH: path, LOG_LEVEL: 'silent', RATE_LIMIT_MAX: 0 })
  const remembering = await buildApp({ ...config, [setting]: cacheBytes }, sharedCompilers)
  const oracle = await buildApp({ ...config, [setting]: 0 }, sharedCompilers)
  const elsewhere = openDatabase(path)
  async function close() {
    elsewhere.close()
    await remembering.close()
    await oracle.close()
    rmSync(dir, { recursive: true, force: true })
  }
  const tokens = callers.map((c) => remembering.tokens.create({ ...c, label: null }).token)
  return { remembering, oracle, elsewhere, tokens, close }
}

/** The same, removed when the test ends. */
export async function twoAppsFor(t: Test, setting: PageCacheSetting, cacheBytes: number, callers: readonly Caller[]) {
  const apps = await twoApps(setting, cacheBytes, callers)
  t.teardown(apps.close)
  return apps
}
