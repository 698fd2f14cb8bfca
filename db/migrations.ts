import type { Database } from 'better-sqlite3'
import { productText } from '../lib/product-files.js'

export interface Migration {
  version: number
  title: string
  sql: string
}

const HEADER = /^-- migration (\d+): (.+)$/gm

/** Splits schema.sql into its numbered sections, checking they count 1, 2, 3 ... without gaps. */
export function parseMigrations(text: string): Migration[] {
  const headers = [...text.matchAll(HEADER)]
  return headers.map((match, i) => {
    const version = Number(match[1])
    if (version !== i + 1) throw new Error(`schema.sql: migration ${version} found where ${i + 1} was expected`)
    const start = (match.index ?? 0) + match[0].length
    const end = headers[i + 1]?.index ?? text.length
    return { version, title: match[2] ?? '', sql: text.slice(start, end) }
  })
}

export function loadMigrations(): Migration[] {
  return parseMigrations(productText('schema.sql'))
}

export function latestVersion(migrations = loadMigrations()): number {
  return migrations.at(-1)?.version ?? 0
}

/**
 * Brings the database up to the newest migration. Each migration runs in its own IMMEDIATE
 * transaction together with its user_version bump, so a crash leaves either the old or the new
 * version, and two processes starting at once cannot both apply the same step. `beforeMigrating`
 * runs once before the first step, when there is one to apply (the pre-migration copy).
 */
export function migrate(
  db: Database,
  migrations = loadMigrations(),
  beforeMigrating?: (current: number, latest: number) => void,
): number {
  const latest = latestVersion(migrations)
  const current = db.pragma('user_version', { simple: true }) as number
  if (current > latest) {
    throw new Error(
      `database schema version ${current} is newer than this build of facility-service knows (${latest}); ` +
        'upgrade the service instead of opening this file with an older one (to roll back, start this build on ' +
        'the copy the newer one kept before migrating: <database>.before-<its version>, docs/OPERATIONS.md)',
    )
  }
  // Up to date: no transaction at all, so opening never waits for another process's write lock
  // (the CLI reading while an admin's sqlite3 session holds it).
  if (current === latest) return latest
  beforeMigrating?.(current, latest)
  for (const migration of migrations) {
    const apply = db.transaction(() => {
      const now = db.pragma('user_version', { simple: true }) as number
      if (now >= migration.version) return
      db.exec(migration.sql)
      db.pragma(`user_version = ${migration.version}`)
    })
    apply.immediate()
  }
  return latest
}
