import { existsSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { runCli } from '../../cli/run.js'
import { listBackups } from '../../db/backups.js'
import { openDatabase } from '../../db/connection.js'
import { capture } from '../cli/capture.js'
import { buildTestApp, operatorHealth } from '../helper.js'
import { until } from '../reliability/fault-helpers.js'
import { backupDatedAt, breakProbeIndex, repairProbeIndex } from './backup-fixtures.js'

const FUTURE = ['facility-20990101T000000000Z.db', 'facility-20990102T000000000Z.db']
const FOREIGN = 'facility-20980101T000000000Z.db'
const LINKED = 'facility-20970101T000000000Z.db'

/**
 * A backup directory as an intruder or an accident left it: empty files named for 2099, a sound
 * SQLite file that is no backup of the service, a link to a real backup elsewhere, an old real
 * backup, and notes.
 */
async function plantedDirectory(root: string): Promise<{ dir: string; old: string; elsewhere: string }> {
  const dir = join(root, 'backups')
  const db = openDatabase(join(root, 'ward.db'))
  try {
    const old = await backupDatedAt(db, dir, Date.parse('2020-01-01T00:00:00Z'))
    const elsewhere = await backupDatedAt(db, join(root, 'elsewhere'), Date.parse('2097-01-01T00:00:00Z'))
    for (const name of FUTURE) writeFileSync(join(dir, name), '')
    new BetterSqlite3(join(dir, FOREIGN)).exec('CREATE TABLE x (y)').close()
    symlinkSync(elsewhere.file, join(dir, LINKED))
    return { dir, old: old.file, elsewhere: elsewhere.file }
  } finally {
    db.close()
  }
}

t.test('pruning and /health count only the service’s backups, by content, never by name alone', async (t) => {
  const root = t.testdir({ backups: { 'notes.txt': 'keep me' }, elsewhere: {} })
  const { dir, old, elsewhere } = await plantedDirectory(root)
  const { app } = await buildTestApp(t, { DATABASE_PATH: join(root, 'ward.db'), BACKUP_DIR: dir, BACKUP_KEEP: 2 })
  await until(() => app.backups.status()?.last?.file !== undefined && app.backups.status()?.last?.file !== old)
  await app.backups.runNow()
  await app.backups.runNow()

  const kept = listBackups(dir)
  t.equal(kept.length, 2, 'BACKUP_KEEP real backups')
  t.notOk(existsSync(old), 'the old real backup was pruned')
  for (const name of [...FUTURE, FOREIGN, LINKED, 'notes.txt']) t.ok(existsSync(join(dir, name)), `${name} untouched`)
  t.ok(existsSync(elsewhere), 'the file the link points to is untouched')

  let health = (await operatorHealth(app)).json().backups
  t.equal(health.lastAt, kept[0]?.at, 'the newest real backup, not a name for 2099')
  t.ok(health.ageMs >= 0, 'its age is never negative')

  rmSync(kept[0]?.file as string)
  health = (await operatorHealth(app)).json().backups
  t.equal(health.lastAt, kept[1]?.at, 'a deleted backup is not reported: what exists is')
  rmSync(kept[1]?.file as string)
  health = (await operatorHealth(app)).json().backups
  t.notOk('lastAt' in health, 'no backup left, none reported (the planted files are none)')
})

t.test(
  'a backup dated in the future (a clock set back) is neither the last backup nor a reason to prune a new one',
  async (t) => {
    const root = t.testdir({ backups: {} })
    const dir = join(root, 'backups')
    const db = openDatabase(join(root, 'ward.db'))
    const ahead = await backupDatedAt(db, dir, Date.parse('2099-06-01T00:00:00Z'))
    db.close()
    const { app } = await buildTestApp(t, { DATABASE_PATH: join(root, 'ward.db'), BACKUP_DIR: dir, BACKUP_KEEP: 1 })
    await app.backups.runNow() // joins the backup the start began
    const taken = listBackups(dir).find((backup) => backup.file !== ahead.file)?.file as string
    t.equal(app.backups.status()?.last?.file, taken, 'the last backup is the one just taken')
    t.ok(existsSync(taken), 'which pruning kept')
    t.notOk(existsSync(ahead.file), 'the one from the future went instead')
    t.ok((await operatorHealth(app)).json().backups.ageMs >= 0)
  },
)

t.test('no partial, -wal, -shm or -journal file is ever left, after success or failure', async (t) => {
  const root = t.testdir({ backups: {} })
  const dir = join(root, 'backups')
  const path = join(root, 'ward.db')
  const { app } = await buildTestApp(t, { DATABASE_PATH: path, BACKUP_DIR: dir })
  await until(() => app.backups.status()?.last != null)
  await app.backups.runNow()
  const names = () => readdirSync(dir).filter((name) => name !== basename(path))
  t.same(
    names().filter((name) => !/^facility-\d{8}T\d{9}Z\.db$/.test(name)),
    [],
    'only finished backups after success',
  )

  breakProbeIndex(path)
  await app.backups.runNow()
  t.match(app.backups.status()?.failing, { message: /integrity check failed/ })
  t.same(
    names().filter((name) => !/^facility-\d{8}T\d{9}Z\.db$/.test(name)),
    [],
    'nothing left by the failed copy',
  )
  repairProbeIndex(path)

  // A kept backup is sealed out of WAL mode: checking it later leaves nothing beside it either.
  const last = app.backups.status()?.last?.file as string
  t.equal(await runCli(['backup', 'verify', last], capture()), 0)
  t.same(
    names().filter((name) => name.startsWith(basename(last)) && name !== basename(last)),
    [],
    'backup verify leaves no side file',
  )
})
