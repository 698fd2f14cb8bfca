// The database limit's file (bench/limit/server.js): a copy of the service's freshly seeded file,
// before the service writes to it, without the service's triggers; and its tokens' facilities.
import { writeFileSync } from 'node:fs'
import BetterSqlite3 from 'better-sqlite3'
import { FACILITIES, facilityName } from '../seed.js'

export function seedLimit(path, tokensPath, servicePath, tokens, serviceCopyPath) {
  const source = new BetterSqlite3(servicePath, { readonly: true })
  try {
    source.prepare('VACUUM INTO ?').run(path)
    // The service that runs in turns with the limit starts from the very same rows.
    if (serviceCopyPath) source.prepare('VACUUM INTO ?').run(serviceCopyPath)
  } finally {
    source.close()
  }
  const db = new BetterSqlite3(path)
  try {
    const triggers = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'trigger'").pluck().all()
    for (const name of triggers) db.exec(`DROP TRIGGER "${name}"`)
  } finally {
    db.close()
  }
  const facilities = { [tokens.admin]: null, [tokens.write]: null }
  for (let f = 0; f < FACILITIES; f++) facilities[tokens.facility[f]] = facilityName(f)
  writeFileSync(tokensPath, JSON.stringify(facilities))
}
