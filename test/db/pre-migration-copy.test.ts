import { statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { openDatabase, type PreMigrationCopy } from '../../db/connection.js'
import { latestVersion, loadMigrations, migrate } from '../../db/migrations.js'
import { describeCopy, preMigrationCopyName, schemaVersionOf } from '../../db/pre-migration-copy.js'
import { createTokenRepository } from '../../db/repositories/tokens.js'
import { productVersion } from '../../lib/product-files.js'

/** A database at schema `version` holding one token, as an older release left it. */
function oldDatabase(path: string, version: number): void {
  const old = new BetterSqlite3(path)
  old.pragma('journal_mode = WAL')
  migrate(old, loadMigrations().slice(0, version))
  createTokenRepository(old).create({ account: 'veteran', role: 'write' })
  old.close()
}

function openReporting(path: string) {
  const reports: { copy: PreMigrationCopy; from: number; to: number }[] = []
  const db = openDatabase(path, 1000, { onPreMigrationCopy: (copy, from, to) => reports.push({ copy, from, to }) })
  db.close()
  return reports
}

t.test('before migrating a database that holds data, a copy of it as it was', async (t) => {
  const path = join(t.testdir(), 'ward.db')
  oldDatabase(path, 5)
  const [report, ...more] = openReporting(path)
  t.same(more, [])
  const file = preMigrationCopyName(path)
  t.equal(file, `${path}.before-${productVersion()}`)
  t.match(report, { copy: { file, schema: 5, kept: false }, from: 5, to: latestVersion() })
  t.equal(statSync(file).mode & 0o777, 0o600, 'readable by the service user only: it holds patient data')
  t.equal(schemaVersionOf(file), 5)
  const copy = new BetterSqlite3(file, { readonly: true })
  t.equal(copy.prepare('SELECT count(*) FROM tokens').pluck().get(), 1, 'with its data')
  copy.close()
  t.match(
    describeCopy(report?.copy as PreMigrationCopy, 5, 11),
    /from schema 5 to 11: kept a consistent copy .* in .*ward\.db\.before-/,
  )
  t.same(openReporting(path), [], 'no migration, no copy')
})

t.test('a new database needs no copy', async (t) => {
  const path = join(t.testdir(), 'new.db')
  t.same(openReporting(path), [])
  t.equal(schemaVersionOf(preMigrationCopyName(path)), undefined)
})

t.test('a copy from before an unfinished upgrade is kept; one of the same schema is replaced', async (t) => {
  const dir = t.testdir()
  const older = join(dir, 'older.db')
  oldDatabase(`${older}.before-${productVersion()}`, 3)
  oldDatabase(older, 6)
  const [kept] = openReporting(older)
  t.match(kept?.copy, { schema: 3, kept: true }, 'the copy at schema 3 stays: it is the truer rollback point')
  t.match(
    describeCopy(kept?.copy as PreMigrationCopy, 6, 11),
    /kept the copy .* \(schema 3\) from before an earlier, unfinished migration/,
  )

  const same = join(dir, 'same.db')
  writeFileSync(`${same}.before-${productVersion()}`, 'not a database')
  oldDatabase(same, 6)
  const [replaced] = openReporting(same)
  t.match(replaced?.copy, { schema: 6, kept: false })
  t.equal(schemaVersionOf(`${same}.before-${productVersion()}`), 6)
})

t.test('the copy is kept whether or not anyone is told of it', async (t) => {
  const path = join(t.testdir(), 'quiet.db')
  oldDatabase(path, 4)
  openDatabase(path).close()
  t.equal(schemaVersionOf(preMigrationCopyName(path)), 4)
})
