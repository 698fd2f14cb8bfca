import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { loadConfig } from '../../config.js'
import { listBackups } from '../../db/backups.js'
import { operatorHealth } from '../helper.js'
import { buildLoggedApp, until } from '../reliability/fault-helpers.js'
import { breakProbeIndex, repairProbeIndex } from './backup-fixtures.js'

const KEEP = 2

/**
 * Scheduled backups as a schedule: the plugin's own timer (a one-second interval), never
 * `runNow()`. Every check reads the directory and the log in one turn of the event loop: a backup
 * is renamed, pruned and logged within one turn too, so the two always agree.
 */
t.test('backups come on the timer, BACKUP_KEEP of them are kept, a copy failing its check is never kept', async (t) => {
  const root = t.testdir({ backups: {} })
  const dir = join(root, 'backups')
  const path = join(root, 'ward.db')
  const { app, lines } = await buildLoggedApp(t, {
    DATABASE_PATH: path,
    BACKUP_DIR: dir,
    BACKUP_INTERVAL_SECONDS: 1,
    BACKUP_KEEP: KEEP,
  })
  const taken = () => lines.filter((line) => line.msg === 'scheduled backup taken')
  const keptNow = () => listBackups(dir).map((backup) => backup.file)
  const namesNow = () => readdirSync(dir)

  await until(() => taken().length >= KEEP + 2)
  let files = taken().map((line) => line.file as string)
  t.equal(new Set(files).size, files.length, 'each tick a new backup')
  t.same(keptNow().sort(), files.slice(-KEEP).sort(), 'exactly the newest BACKUP_KEEP are kept')
  t.equal(namesNow().length, KEEP, 'and nothing else is in the directory')
  const removed = taken().reduce((sum, line) => sum + Number(line.removed), 0)
  t.equal(removed, files.length - KEEP, 'each older one was pruned')

  breakProbeIndex(path)
  await until(() => app.backups.status()?.failing != null)
  files = taken().map((line) => line.file as string)
  t.same(keptNow().sort(), files.slice(-KEEP).sort(), 'the copy that failed its check was not kept')
  t.equal(namesNow().length, KEEP, 'nor left under any name')
  const health = await operatorHealth(app)
  t.equal(health.statusCode, 200, 'the ward works')
  t.match(health.json().backups.failing, { message: /the copy failed its check \(integrity check failed: / })
  t.equal(health.json().backups.lastAt, listBackups(dir)[0]?.at, 'the last good backup is still the last')

  repairProbeIndex(path)
  await until(() => lines.some((line) => line.msg === 'scheduled backups work again'))
  t.same(
    keptNow().sort(),
    taken()
      .map((line) => line.file as string)
      .slice(-KEEP)
      .sort(),
  )
  t.notOk('failing' in (await operatorHealth(app)).json().backups, 'the episode is over')
})

t.test('BACKUP_INTERVAL_SECONDS is checked like every setting', async (t) => {
  t.throws(() => loadConfig({ BACKUP_INTERVAL_SECONDS: '-1' }), /BACKUP_INTERVAL_SECONDS="-1"/)
  t.throws(() => loadConfig({ BACKUP_INTERVAL_SECONDS: '0.5' }), /BACKUP_INTERVAL_SECONDS="0.5"/)
  t.equal(loadConfig({}).BACKUP_INTERVAL_SECONDS, 0, 'off by default: BACKUP_INTERVAL_MINUTES holds')
})
