import { existsSync } from 'node:fs'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { runCli } from '../../../cli/run.js'
import { openDatabase } from '../../../db/connection.js'
import { latestVersion, loadMigrations, migrate } from '../../../db/migrations.js'
import { schemaVersionOf } from '../../../db/pre-migration-copy.js'
import { productVersion } from '../../../lib/product-files.js'
import { capture } from '../capture.js'

/** A database at schema 5, opened (so migrated, with its copy kept) by this version. */
function upgraded(dir: string): string {
  const path = join(dir, 'ward.db')
  const old = new BetterSqlite3(path)
  old.pragma('journal_mode = WAL')
  migrate(old, loadMigrations().slice(0, 5))
  old.close()
  openDatabase(path).close()
  return path
}

t.test('rollback puts back the copy kept before the migration, and keeps the migrated file', async (t) => {
  const path = upgraded(t.testdir())
  const io = capture()
  t.equal(await runCli(['rollback', '--database', path], io), 0, io.stderr.join('\n'))
  t.equal(schemaVersionOf(path), 5, 'the database is the copy again')
  const kept = `${path}.after-${productVersion()}`
  t.equal(schemaVersionOf(kept), latestVersion(), 'the migrated database is kept beside it')
  t.notOk(existsSync(`${path}.before-${productVersion()}`))
  t.match(
    io.stdout.join('\n'),
    /is the copy taken before version .* \(schema 5\)[\s\S]*kept as .*\.after-[\s\S]*start the service/,
  )

  const again = capture()
  t.equal(await runCli(['rollback', '--database', path], again), 1)
  t.match(again.stderr.join('\n'), /no .*\.before-.*: version .* has not migrated .*, so there is nothing to roll back/)
})

t.test('rollback refuses a database that a process has open', async (t) => {
  const path = upgraded(t.testdir())
  const open = new BetterSqlite3(path)
  t.teardown(() => open.close())
  const io = capture()
  t.equal(await runCli(['rollback', '--database', path], io), 1)
  t.match(io.stderr.join('\n'), new RegExp(`is open in process ${process.pid}: stop the service first`))
  t.equal(schemaVersionOf(path), latestVersion(), 'nothing was moved')
})
